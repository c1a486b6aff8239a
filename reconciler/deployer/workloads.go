package deployer

import (
	"fmt"
	"strings"

	"pinbot.dev/pinbot/reconciler/object"
)

// IsWorkload reports whether pinbot verifies the Pods of objects of this
// group and kind: Deployments, StatefulSets, DaemonSets, Jobs and bare
// Pods, as the reconciler's verify does.
func IsWorkload(group, kind string) bool {
	switch group + "/" + kind {
	case "apps/Deployment", "apps/StatefulSet", "apps/DaemonSet", "batch/Job", "/Pod":
		return true
	}
	return false
}

// Resources lists the objects the Application manages, from
// status.resources, sorted: hooks (which Argo CD runs and deletes per
// sync) and objects Argo CD would prune (no longer in Git) left out.
func (a *Application) Resources() []object.Ref {
	var out []object.Ref
	for _, r := range a.Status.Resources {
		if r.Hook || r.RequiresPruning {
			continue
		}
		out = append(out, object.Ref{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name})
	}
	object.Sort(out)
	return out
}

// Workloads lists the Application's workloads to verify: the Resources
// that are workloads (IsWorkload).
func (a *Application) Workloads() []object.Ref { return workloads(a.Resources()) }

// Resources lists the objects the Kustomization applied, from
// status.inventory.entries, sorted. A malformed entry is a *FieldError
// naming it.
func (k *Kustomization) Resources() ([]object.Ref, error) {
	if k.Status.Inventory == nil {
		return nil, nil
	}
	out := make([]object.Ref, 0, len(k.Status.Inventory.Entries))
	for i, e := range k.Status.Inventory.Entries {
		r, err := ParseInventoryID(e.ID)
		if err != nil {
			return nil, &FieldError{Object: k.Name(), Field: fmt.Sprintf("status.inventory.entries[%d].id", i), Reason: err.Error()}
		}
		out = append(out, r)
	}
	object.Sort(out)
	return out, nil
}

// Workloads lists the Kustomization's workloads to verify: the Resources
// that are workloads (IsWorkload).
func (k *Kustomization) Workloads() ([]object.Ref, error) {
	refs, err := k.Resources()
	return workloads(refs), err
}

// ParseInventoryID reads a Flux inventory id,
// "<namespace>_<name>_<group>_<kind>" as cli-utils' ObjMetadata writes it:
// the namespace and group may be empty, and a colon in a name (RBAC
// objects) is written "__". (cli-utils' own parser is not used: its
// package pulls in cli-runtime and client-go's REST clients.)
func ParseInventoryID(id string) (object.Ref, error) {
	ns, rest, ok := strings.Cut(id, "_")
	if !ok {
		return object.Ref{}, fmt.Errorf("%q: want <namespace>_<name>_<group>_<kind>", id)
	}
	i := strings.LastIndex(rest, "_")
	if i < 0 {
		return object.Ref{}, fmt.Errorf("%q: want <namespace>_<name>_<group>_<kind>", id)
	}
	kind, rest := rest[i+1:], rest[:i]
	i = strings.LastIndex(rest, "_")
	if i < 0 {
		return object.Ref{}, fmt.Errorf("%q: want <namespace>_<name>_<group>_<kind>", id)
	}
	group, name := rest[i+1:], strings.ReplaceAll(rest[:i], "__", ":")
	switch {
	case strings.Contains(name, "_"):
		return object.Ref{}, fmt.Errorf("%q: too many fields", id)
	case name == "" || kind == "":
		return object.Ref{}, fmt.Errorf("%q: empty name or kind", id)
	}
	return object.Ref{Group: group, Kind: kind, Namespace: ns, Name: name}, nil
}

func workloads(refs []object.Ref) []object.Ref {
	var out []object.Ref
	for _, r := range refs {
		if IsWorkload(r.Group, r.Kind) {
			out = append(out, r)
		}
	}
	return out
}

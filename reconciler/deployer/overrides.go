package deployer

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// argoOverrideKeys are the spec.source.kustomize fields pinbot renders:
// they become the same fields of a kustomization beneath which the path
// is built. The others (components, version, forceCommonLabels, …) are
// refused, naming the field.
var argoOverrideKeys = []string{"images", "namePrefix", "nameSuffix", "namespace", "commonLabels", "commonAnnotations", "replicas", "patches"}

// argoOverrides turns an Application's spec.source.kustomize into
// kustomization fields (see Source.Kustomize).
func argoOverrides(obj, field string, k map[string]any) (map[string]any, error) {
	fail := func(f, format string, args ...any) (map[string]any, error) {
		return nil, &FieldError{Object: obj, Field: field + f, Reason: fmt.Sprintf(format, args...)}
	}
	out := map[string]any{}
	for key, v := range k {
		if !slices.Contains(argoOverrideKeys, key) {
			return fail("."+key, "pinbot renders the kustomize overrides %s, not this one", strings.Join(argoOverrideKeys, ", "))
		}
		switch key {
		case "images":
			list, _ := v.([]any)
			var images []any
			for i, s := range list {
				str, ok := s.(string)
				if !ok {
					return fail(fmt.Sprintf(".images[%d]", i), "want a string such as name=new/name:tag@sha256:…")
				}
				images = append(images, kustomizeImage(str))
			}
			out[key] = images
		case "replicas":
			list, _ := v.([]any)
			var reps []any
			for i, r := range list {
				m, _ := r.(map[string]any)
				count, err := intCount(m["count"])
				if m == nil || m["name"] == nil || err != nil {
					return fail(fmt.Sprintf(".replicas[%d]", i), "want {name, count} with a whole count")
				}
				reps = append(reps, map[string]any{"name": m["name"], "count": count})
			}
			out[key] = reps
		case "patches":
			list, _ := v.([]any)
			for i, p := range list {
				m, _ := p.(map[string]any)
				if m["path"] != nil {
					return fail(fmt.Sprintf(".patches[%d].path", i), "pinbot renders inline patches; a patch file belongs in the repository's kustomization.yaml")
				}
			}
			out[key] = v
		default:
			out[key] = v
		}
	}
	return out, nil
}

// kustomizeImage reads kustomize's image syntax, as `kustomize edit set
// image` and Argo CD take it: [name=]newName[:tag][@digest], where
// without "=" the name is the image's own.
func kustomizeImage(s string) map[string]any {
	name, rest, renamed := strings.Cut(s, "=")
	if !renamed {
		rest = s
	}
	img := map[string]any{}
	if r, d, ok := strings.Cut(rest, "@"); ok {
		rest, img["digest"] = r, d
	}
	if i := strings.LastIndex(rest, ":"); i > strings.LastIndex(rest, "/") {
		rest, img["newTag"] = rest[:i], rest[i+1:]
	}
	if renamed {
		img["name"], img["newName"] = name, rest
	} else {
		img["name"] = rest
	}
	return img
}

func intCount(v any) (int64, error) {
	switch n := v.(type) {
	case int64:
		return n, nil
	case float64:
		if n == float64(int64(n)) {
			return int64(n), nil
		}
	case string:
		return strconv.ParseInt(n, 10, 64)
	}
	return 0, fmt.Errorf("not a whole number: %v", v)
}

// fluxOverrides are a Kustomization's kustomize fields: spec.images,
// spec.patches, spec.namePrefix and spec.nameSuffix, which Flux adds to
// the kustomization it builds.
func fluxOverrides(s KustomizationSpec) map[string]any {
	out := map[string]any{}
	if len(s.Images) > 0 {
		out["images"] = s.Images
	}
	if len(s.Patches) > 0 {
		out["patches"] = s.Patches
	}
	if s.NamePrefix != "" {
		out["namePrefix"] = s.NamePrefix
	}
	if s.NameSuffix != "" {
		out["nameSuffix"] = s.NameSuffix
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

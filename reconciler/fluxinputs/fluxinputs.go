// Package fluxinputs reads what a Flux object takes from the cluster
// besides Git: a HelmRelease's valuesFrom and a Kustomization's
// postBuild.substituteFrom, composed as helm-controller and
// kustomize-controller compose them, so that pinbot renders what Flux
// applied. It needs get on the ConfigMaps and Secrets they name.
package fluxinputs

import (
	"context"
	"fmt"
	"maps"

	"helm.sh/helm/v4/pkg/strvals"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	sigsyaml "sigs.k8s.io/yaml"

	"pinbot.dev/pinbot/reconciler/deployer"
)

// defaultValuesKey is the key of a valuesFrom ConfigMap or Secret that
// holds the values when valuesKey names none.
const defaultValuesKey = "values.yaml"

// HelmValues are a HelmRelease's values as helm-controller composes them:
// each valuesFrom ConfigMap or Secret in order, its key's YAML merged over
// the ones before (or, with targetPath, its value set at that path), then
// spec.values over all of them.
func HelmValues(ctx context.Context, kube kubernetes.Interface, h *deployer.Helm) (map[string]any, error) {
	out := map[string]any{}
	for i, ref := range h.ValuesFrom {
		field := fmt.Sprintf("spec.valuesFrom[%d]", i)
		key := ref.ValuesKey
		if key == "" {
			key = defaultValuesKey
		}
		data, err := read(ctx, kube, ref.Kind, h.ValuesNamespace, ref.Name)
		value, found := data[key]
		switch {
		case apierrors.IsNotFound(err) && ref.Optional:
			continue
		case err != nil:
			return nil, fmt.Errorf("%s: reading %s %s/%s: %w", field, ref.Kind, h.ValuesNamespace, ref.Name, err)
		case !found && ref.Optional:
			continue
		case !found:
			return nil, fmt.Errorf("%s: %s %s/%s has no key %q", field, ref.Kind, h.ValuesNamespace, ref.Name, key)
		}
		if ref.TargetPath != "" {
			if err := strvals.ParseInto(ref.TargetPath+"="+value, out); err != nil {
				return nil, fmt.Errorf("%s: targetPath %q: %w", field, ref.TargetPath, err)
			}
			continue
		}
		values := map[string]any{}
		if err := sigsyaml.Unmarshal([]byte(value), &values); err != nil {
			return nil, fmt.Errorf("%s: %s %s/%s key %q: %w", field, ref.Kind, h.ValuesNamespace, ref.Name, key, err)
		}
		out = merge(out, values)
	}
	return merge(out, h.Values), nil
}

// Vars are the variables of a Kustomization's post-build substitution:
// the data of substituteFrom's ConfigMaps and Secrets, in order, then
// substitute's, each over the ones before, as kustomize-controller reads
// them.
func Vars(ctx context.Context, kube kubernetes.Interface, sub *deployer.Substitute) (map[string]string, error) {
	vars := map[string]string{}
	for _, f := range sub.From {
		data, err := read(ctx, kube, f.Kind, sub.Namespace, f.Name)
		switch {
		case apierrors.IsNotFound(err) && f.Optional:
			continue
		case err != nil:
			return nil, fmt.Errorf("postBuild.substituteFrom: reading %s %s/%s: %w", f.Kind, sub.Namespace, f.Name, err)
		}
		maps.Copy(vars, data)
	}
	maps.Copy(vars, sub.Vars)
	return vars, nil
}

// read is the data of ConfigMap or Secret (kind) ns/name, as strings.
func read(ctx context.Context, kube kubernetes.Interface, kind, ns, name string) (map[string]string, error) {
	switch kind {
	case "ConfigMap":
		cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return cm.Data, nil
	case "Secret":
		s, err := kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		data := make(map[string]string, len(s.Data))
		for k, v := range s.Data {
			data[k] = string(v)
		}
		return data, nil
	}
	return nil, fmt.Errorf("kind %q: want ConfigMap or Secret", kind)
}

// merge merges src over dst, mapping into mapping, and returns the
// result; neither is changed.
func merge(dst, src map[string]any) map[string]any {
	out := make(map[string]any, len(dst)+len(src))
	maps.Copy(out, dst)
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := out[k].(map[string]any); ok {
				out[k] = merge(dm, sm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

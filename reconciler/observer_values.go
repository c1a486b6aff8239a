package reconciler

import (
	"context"
	"fmt"

	"helm.sh/helm/v4/pkg/strvals"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"pinbot.dev/pinbot/reconciler/deployer"
)

// defaultValuesKey is the key of a valuesFrom ConfigMap or Secret that
// holds the values when valuesKey names none.
const defaultValuesKey = "values.yaml"

// helmValues are a Flux HelmRelease's values as helm-controller composes
// them: each valuesFrom ConfigMap or Secret in order, its key's YAML
// merged over the ones before (or, with targetPath, its value set at that
// path), then spec.values over all of them. pinbot needs get on those
// ConfigMaps and Secrets.
func (ob *observer) helmValues(ctx context.Context, h *deployer.Helm) (map[string]any, error) {
	out := map[string]any{}
	for i, ref := range h.ValuesFrom {
		field := fmt.Sprintf("spec.valuesFrom[%d]", i)
		key := ref.ValuesKey
		if key == "" {
			key = defaultValuesKey
		}
		var (
			value string
			found bool
			err   error
		)
		switch ref.Kind {
		case "ConfigMap":
			var cm *corev1.ConfigMap
			if cm, err = ob.r.kube.CoreV1().ConfigMaps(h.ValuesNamespace).Get(ctx, ref.Name, metav1.GetOptions{}); err == nil {
				value, found = cm.Data[key]
			}
		case "Secret":
			var s *corev1.Secret
			if s, err = ob.r.kube.CoreV1().Secrets(h.ValuesNamespace).Get(ctx, ref.Name, metav1.GetOptions{}); err == nil {
				var b []byte
				b, found = s.Data[key]
				value = string(b)
			}
		}
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
		out = mergeValues(out, values)
	}
	return mergeValues(out, h.Values), nil
}

// mergeValues merges src over dst, mapping into mapping, and returns the
// result; neither is changed.
func mergeValues(dst, src map[string]any) map[string]any {
	out := make(map[string]any, len(dst)+len(src))
	for k, v := range dst {
		out[k] = v
	}
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := out[k].(map[string]any); ok {
				out[k] = mergeValues(dm, sm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

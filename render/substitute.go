package render

import (
	"fmt"

	"github.com/fluxcd/pkg/envsubst"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// SubstituteDisabled is the label or annotation value with which an
// object opts out of Flux's post-build substitution.
const (
	substituteKey      = "kustomize.toolkit.fluxcd.io/substitute"
	SubstituteDisabled = "disabled"
)

// Substitute replaces ${var} references in objs with vars, as
// kustomize-controller's postBuild does after the build and with the
// same library: every object, except those labelled or annotated
// kustomize.toolkit.fluxcd.io/substitute: disabled, is written as YAML,
// substituted (an undefined variable is empty, ${var:=default} gives
// its default) and read back.
func Substitute(objs []*unstructured.Unstructured, vars map[string]string) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, u := range objs {
		if u.GetLabels()[substituteKey] == SubstituteDisabled || u.GetAnnotations()[substituteKey] == SubstituteDisabled {
			out = append(out, u)
			continue
		}
		b, err := yaml.Marshal(u.Object)
		if err != nil {
			return nil, fmt.Errorf("substituting in %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		s, err := envsubst.Eval(string(b), func(k string) (string, bool) { return vars[k], true })
		if err != nil {
			return nil, fmt.Errorf("substituting in %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		n := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(s), &n.Object); err != nil {
			return nil, fmt.Errorf("substituting in %s %s: the result is not YAML: %w", u.GetKind(), u.GetName(), err)
		}
		out = append(out, n)
	}
	return out, nil
}

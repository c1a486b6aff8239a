package config

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"pinbot.dev/pinbot/internal/clip"
)

// HelmConfig is an app's `helm:` block: how its chart renders, as
// `helm template RELEASE PATH -n NAMESPACE -f … --set …` would.
type HelmConfig struct {
	// ReleaseName is .Release.Name. Default: the app's name.
	ReleaseName string `yaml:"releaseName"`
	// ValueFiles, slash paths relative to the chart directory, override
	// the chart's values.yaml; later files override earlier ones. They may
	// not leave the repository.
	ValueFiles []string `yaml:"valueFiles"`
	// Values override the value files.
	Values map[string]any `yaml:"values"`
	// Parameters override everything else, in order, as --set (or
	// --set-string with forceString) does.
	Parameters []HelmParameter `yaml:"parameters"`
}

// HelmParameter is one `--set name=value` of an app's chart.
type HelmParameter struct {
	// Name is the value's dotted path, image.digest.
	Name string `yaml:"name"`
	// Value is set at Name, parsed as --set parses it.
	Value string `yaml:"value"`
	// ForceString keeps Value a string, as --set-string does.
	ForceString bool `yaml:"forceString"`
}

// maxReleaseName is Helm's limit on a release name.
const maxReleaseName = 53

// problems lists what is wrong with a helm block; nil has none.
func (h *HelmConfig) problems() []string {
	if h == nil {
		return nil
	}
	var p []string
	if n := h.ReleaseName; n != "" && (len(n) > maxReleaseName || len(validation.IsDNS1123Subdomain(n)) > 0) {
		p = append(p, fmt.Sprintf("helm.releaseName %s: want a Helm release name (lowercase letters, digits, '-' and '.', at most %d characters)", clip.Quote(n), maxReleaseName))
	}
	for _, f := range h.ValueFiles {
		if f == "" || path.IsAbs(f) || strings.Contains(f, "\\") {
			p = append(p, fmt.Sprintf("helm.valueFiles: %s: want a slash path relative to the chart, inside the repository", clip.Quote(f)))
		}
	}
	for i, prm := range h.Parameters {
		if strings.TrimSpace(prm.Name) == "" {
			p = append(p, fmt.Sprintf("helm.parameters[%d]: want a name", i))
		}
	}
	if _, err := JSONValues(h.Values); err != nil {
		p = append(p, fmt.Sprintf("helm.values: %s", err))
	}
	return p
}

// JSONValues gives values the types a values file has in Helm (numbers
// float64, maps map[string]any), so that the config's values and a
// values file's render alike.
func JSONValues(v map[string]any) (map[string]any, error) {
	if len(v) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("not representable as JSON: %w", err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("not representable as JSON: %w", err)
	}
	return out, nil
}

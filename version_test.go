package pinbot_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestOneVersion: the file VERSION is the one source of pinbot's version,
// and every place a user reads a version agrees with it: the chart's
// version and appVersion, the image deploy/base runs, the install lines
// of the README and docs/, and the CHANGELOG's newest entry. make build
// and make release stamp it into the binary (the Makefile reads VERSION).
func TestOneVersion(t *testing.T) {
	version := strings.TrimSpace(string(read(t, "VERSION")))
	if !regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`).MatchString(version) {
		t.Fatalf("VERSION %q: want vMAJOR.MINOR.PATCH", version)
	}
	chartVersion := strings.TrimPrefix(version, "v")

	var chart struct{ Version, AppVersion string }
	if err := yaml.Unmarshal(read(t, "charts/pinbot/Chart.yaml"), &chart); err != nil {
		t.Fatal(err)
	}
	if chart.Version != chartVersion || chart.AppVersion != version {
		t.Errorf("charts/pinbot/Chart.yaml: version %s, appVersion %s; want %s and %s", chart.Version, chart.AppVersion, chartVersion, version)
	}
	var values struct{ Image struct{ Tag string } }
	if err := yaml.Unmarshal(read(t, "charts/pinbot/values.yaml"), &values); err != nil {
		t.Fatal(err)
	}
	if values.Image.Tag != "" && values.Image.Tag != version {
		t.Errorf("charts/pinbot/values.yaml: image.tag %s, want empty (the appVersion) or %s", values.Image.Tag, version)
	}

	var base struct {
		Images []struct{ Name, NewTag string }
	}
	if err := yaml.Unmarshal(read(t, "deploy/base/kustomization.yaml"), &base); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, img := range base.Images {
		if img.Name == "pinbot" {
			found = true
			if img.NewTag != version {
				t.Errorf("deploy/base/kustomization.yaml: pinbot's newTag %s, want %s", img.NewTag, version)
			}
		}
	}
	if !found {
		t.Error("deploy/base/kustomization.yaml pins no image named pinbot")
	}

	if !strings.Contains(string(read(t, "Makefile")), "$$(cat VERSION)") {
		t.Error("the Makefile does not take its version from the file VERSION")
	}

	// The CHANGELOG's newest heading is VERSION's, dated when this source
	// is that release and "(unreleased)" while it is becoming it: no
	// other heading, so unreleased code never takes a released version.
	m := regexp.MustCompile(`(?m)^## (.*)$`).FindSubmatch(read(t, "CHANGELOG.md"))
	if m == nil || !regexp.MustCompile(`^`+regexp.QuoteMeta(version)+` \((unreleased|\d{4}-\d{2}-\d{2})\)$`).Match(m[1]) {
		t.Errorf("CHANGELOG.md's newest heading is %q, want \"%s (unreleased)\" or \"%s (YYYY-MM-DD)\"", m, version, version)
	}

	// An install line names the release: an image tag, a chart version,
	// make release's VERSION. The CHANGELOG and the upgrade guide speak
	// of older releases, and are left out.
	installLine := regexp.MustCompile(`pinbot:(v\d+\.\d+\.\d+)|charts/pinbot[^\n]*--version[ =](\d+\.\d+\.\d+)|VERSION=(v\d+\.\d+\.\d+)|charts/pinbot:(\d+\.\d+\.\d+)`)
	docs, _ := filepath.Glob("docs/*.md")
	for _, doc := range append(docs, "README.md", "charts/pinbot/templates/NOTES.txt", "charts/pinbot/values.yaml") {
		if doc == "docs/upgrade.md" {
			continue
		}
		for _, m := range installLine.FindAllSubmatch(read(t, doc), -1) {
			for _, v := range m[1:] {
				if len(v) > 0 && string(v) != version && string(v) != chartVersion {
					t.Errorf("%s: %q names %s; this source is %s (file VERSION)", doc, m[0], v, version)
				}
			}
		}
	}
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

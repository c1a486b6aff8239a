package reconciler

import (
	"fmt"
	"strings"

	"github.com/robfig/cron/v3"
	"gopkg.in/yaml.v3"

	"pinbot.dev/pinbot/internal/imageref"
)

// PromoteTarget is one manifest repository that `pinbot serve` promotes
// into on its own: on a drift schedule, and when Gitea says one of Images
// was pushed.
type PromoteTarget struct {
	// Repo is the manifest repository on the forge, as OWNER/NAME.
	Repo string `yaml:"repo"`
	// Drift is a cron schedule (five fields, or a descriptor such as
	// @hourly) on which the repository's tracked tags are checked for a
	// new digest; empty for none.
	Drift string `yaml:"drift"`
	// Images are repositories (no tag or digest) whose pushes are promoted
	// into Repo.
	Images []string `yaml:"images"`

	line int // line of the entry in the config file
}

// Line is the entry's line in the config file, 0 when unknown.
func (p *PromoteTarget) Line() int { return p.line }

// problems lists what is wrong with one promote entry.
func (p *PromoteTarget) problems() []string {
	var out []string
	if owner, name, ok := strings.Cut(p.Repo, "/"); !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		out = append(out, fmt.Sprintf("repo %q: want OWNER/NAME of a repository on the forge", p.Repo))
	}
	if p.Drift != "" {
		if _, err := cron.ParseStandard(p.Drift); err != nil {
			out = append(out, fmt.Sprintf("drift %q: %s", p.Drift, err))
		}
	}
	for _, img := range p.Images {
		if _, err := imageref.ParseRepository(img); err != nil {
			out = append(out, fmt.Sprintf("images: %s", err))
		}
	}
	if p.Drift == "" && len(p.Images) == 0 {
		out = append(out, "want drift, images or both")
	}
	return out
}

// listNodes returns the items of the top-level sequence called key, for
// line numbers.
func listNodes(root *yaml.Node, key string) []*yaml.Node {
	if root.Kind != yaml.DocumentNode || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key && m.Content[i+1].Kind == yaml.SequenceNode {
			return m.Content[i+1].Content
		}
	}
	return nil
}

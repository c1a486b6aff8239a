// Package examples holds the Examples: section of each pinbot command's
// help, as a reader pastes them: gitea.example is her Gitea, platform/
// her organisation. A test parses every line against the command's flags.
package examples

import (
	"strings"

	"github.com/spf13/cobra"
)

// ByCommand are the examples of each command, by its path after "pinbot".
var ByCommand = map[string]string{
	"promote": `# Kaniko wrote image.txt (--image-name-with-digest-file): one pull request
pinbot promote --image-name-with-digest-file image.txt --forge-url https://gitea.example --repo platform/manifests
# buildx --metadata-file, into a repository with a release chain: ask serve's gate
pinbot promote --metadata-file meta.json --forge-url https://gitea.example --repo platform/manifests --gate-url https://pinbot.example --gate-token-file gate-token
# a hotfix past the chain, on a branch of its own, with who and why on record
pinbot promote --env prod --force --reason "CVE fix" --image gitea.example/platform/web:1.4.1 --digest sha256:0b7e… --forge-url https://gitea.example --repo platform/manifests`,
	"drift": `# propose every tracked tag that moved, without writing
pinbot drift --forge-url https://gitea.example --repo platform/manifests --dry-run
# as a CronJob would, holding builds younger than an hour
pinbot drift --forge-url https://gitea.example --repo platform/manifests --min-age 1h`,
	"status": `# with only a kubeconfig context: serve's config is read from pinbot-system
pinbot status
pinbot status web -o json`,
	"verify": `# wait for the rollout, then prove the Pods run what Git pins
pinbot verify web --wait --timeout 5m`,
	"history":       `pinbot history web`,
	"diff":          `pinbot diff web`,
	"sync":          `pinbot sync web --dry-run`,
	"refresh":       `pinbot refresh web`,
	"ledger":        `pinbot ledger --repo platform/manifests -o json`,
	"ledger reseal": `pinbot ledger reseal --repo platform/manifests --reason "restored from backup"`,
	"hold list":     `pinbot hold list`,
	"hold release": `# the 12-digit digest the release page shows is enough
pinbot hold release prod gitea.example/platform/web@sha256:0b7e5c1d9a2f --reason "fixed upstream, proven in staging again"`,
	"chain pause":   `pinbot chain pause prod --reason "incident 4711" --repo platform/manifests`,
	"chain resume":  `pinbot chain resume prod --reason "incident 4711 closed" --repo platform/manifests`,
	"chain approve": `pinbot chain approve 42 --head 3f2a1c9e --reason "new environment dr, reviewed" --repo platform/manifests`,
	"protect": `# what the branch protection lacks, then set it
pinbot protect --forge-url https://gitea.example --repo platform/manifests
pinbot protect --forge-url https://gitea.example --repo platform/manifests --apply --merge-allow pinbot,admin`,
	"attest verify": `pinbot attest verify gitea.example/platform/web@sha256:0b7e… --env staging --key cosign.pub --min-soak 30m`,
	"pins list":     `pinbot pins list --dir manifests -o json`,
	"pins set":      `pinbot pins set gitea.example/platform/web@sha256:0b7e… --dir manifests --dry-run`,
	"resolve":       `pinbot resolve gitea.example/platform/web:1.4.0`,
	"serve":         `pinbot serve --config /etc/pinbot/config/reconciler.yaml --listen :8080 --leader-elect`,
	"config validate": `pinbot config validate reconciler.yaml
pinbot config validate .pinbot.yaml`,
}

// Apply sets each command's Example from ByCommand, indented as cobra
// prints it, and returns root.
func Apply(root *cobra.Command) *cobra.Command {
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.TrimPrefix(strings.TrimPrefix(c.CommandPath(), root.Name()), " ")
		if ex, ok := ByCommand[path]; ok {
			c.Example = "  " + strings.ReplaceAll(ex, "\n", "\n  ")
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return root
}

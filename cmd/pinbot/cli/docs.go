package cli

import (
	"os"

	"github.com/spf13/cobra/doc"
)

// WriteReference writes the CLI reference, one Markdown page per
// command, into dir (docs/cli): make docs. The environment's defaults
// for flags ($PINBOT_FORGE_URL, …) are left out, so the pages say the
// same on every machine.
func WriteReference(dir string) error {
	for _, env := range []string{forgeURLEnv, repoEnv, configEnv} {
		if v, ok := os.LookupEnv(env); ok {
			os.Unsetenv(env)
			defer os.Setenv(env, v)
		}
	}
	root := NewRootCommand()
	root.DisableAutoGenTag = true
	return doc.GenMarkdownTree(root, dir)
}

package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/cmd/pinbot/internal/output"
	"pinbot.dev/pinbot/internal/confined"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/serve"
)

func newConfigCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Check pinbot's configuration files",
	}
	cmd.AddCommand(newConfigValidateCommand(g))
	return cmd
}

func newConfigValidateCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "validate [FILE...]",
		Short: "Validate .pinbot.yaml and the reconciler (serve) config offline",
		Long: `Validates each FILE without reaching Gitea, a registry or a cluster. A file
named .pinbot.yaml is a manifest repository's config: its signature keys
and trusted roots are read from beside it, as promote reads them from the
repository. Any other file is the reconciler's (serve's) config. Unknown
keys, bad values and missing files are errors naming file:line.

Without FILE it validates $` + configEnv + ` when set and ./.pinbot.yaml when
present. Exits 1 when any file is invalid.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			files := args
			if len(files) == 0 {
				if f := os.Getenv(configEnv); f != "" {
					files = append(files, f)
				}
				if _, err := os.Stat(promote.ConfigFile); err == nil {
					files = append(files, promote.ConfigFile)
				}
			}
			if len(files) == 0 {
				return usageErrorf("no FILE given, $%s is not set and there is no %s here", configEnv, promote.ConfigFile)
			}
			var out []output.Validated
			bad := 0
			for _, f := range files {
				v := validateFile(f)
				if !v.Valid {
					bad++
				}
				out = append(out, v)
			}
			if err := output.ConfigsValidated(cmd.OutOrStdout(), g.json(), out); err != nil {
				return err
			}
			if bad > 0 {
				// The output said why; the exit code says it failed.
				return fmt.Errorf("%d of %d config files are invalid", bad, len(out))
			}
			return nil
		},
	}
}

// validateFile validates one file, by its name's kind.
func validateFile(file string) output.Validated {
	v := output.Validated{File: file, Kind: "reconciler"}
	var err error
	if filepath.Base(file) == promote.ConfigFile {
		v.Kind = "repository"
		var dir *confined.FS
		if dir, err = confined.Open(filepath.Dir(file)); err == nil {
			_, err = promote.LoadConfig(dir)
			dir.Close()
		}
	} else {
		_, err = serve.Load(file)
	}
	if err != nil {
		v.Error = redact.String(err.Error())
		return v
	}
	v.Valid = true
	return v
}

package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

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

Files given together are checked against each other: the apps a
.pinbot.yaml's environments name must be apps of the serve config given
(a note, not an error, when that config discovers apps).

Without FILE it validates $` + configEnv + ` when set and ./.pinbot.yaml when
present, together. Exits 1 when any file is invalid.`,
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
			var (
				out    []output.Validated
				repos  []*promote.Config
				serves []*serve.Config
			)
			for _, f := range files {
				v, repo, srv := validateFile(f)
				out = append(out, v)
				repos, serves = append(repos, repo), append(serves, srv)
			}
			crossCheck(out, repos, serves)
			bad := 0
			for _, v := range out {
				if !v.Valid {
					bad++
				}
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

// validateFile validates one file, by its name's kind, and returns what
// it loaded.
func validateFile(file string) (output.Validated, *promote.Config, *serve.Config) {
	v := output.Validated{File: file, Kind: "reconciler"}
	var (
		err  error
		repo *promote.Config
		srv  *serve.Config
	)
	if filepath.Base(file) == promote.ConfigFile {
		v.Kind = "repository"
		var dir *confined.FS
		if dir, err = confined.Open(filepath.Dir(file)); err == nil {
			var c promote.Config
			c, err = promote.LoadConfig(dir)
			repo = &c
			dir.Close()
		}
	} else {
		srv, err = serve.Load(file)
	}
	if err != nil {
		v.Error = redact.String(err.Error())
		return v, nil, nil
	}
	v.Valid = true
	return v, repo, srv
}

// crossCheck checks the files validated together against each other:
// the apps a .pinbot.yaml's environments name must be apps of the serve
// configs given. Where a serve config discovers apps (discover:), an app
// it does not list may yet be found, so that is a note, not an error.
func crossCheck(out []output.Validated, repos []*promote.Config, serves []*serve.Config) {
	var names []string
	known, discovers := map[string]bool{}, false
	for i, s := range serves {
		if s == nil {
			continue
		}
		names = append(names, out[i].File)
		discovers = discovers || len(s.Discover) > 0
		for _, a := range s.Apps {
			known[a.Name] = true
		}
	}
	if len(names) == 0 {
		return
	}
	for i, r := range repos {
		if r == nil {
			continue
		}
		unknown := r.Environments.UnknownApps(func(a string) bool { return known[a] })
		if len(unknown) == 0 {
			continue
		}
		msg := fmt.Sprintf("environments name apps %s does not run: %s", strings.Join(names, ", "), strings.Join(unknown, ", "))
		if discovers {
			out[i].Notes = append(out[i].Notes, msg+"; they must be discovered (discover:), or those environments prove nothing and nothing moves on from them")
			continue
		}
		out[i].Valid = false
		out[i].Error = msg + ": those environments prove nothing, and nothing moves on from them (name apps of serve's config)"
	}
}

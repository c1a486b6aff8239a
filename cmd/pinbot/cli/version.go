package cli

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Set at build time with -ldflags "-X pinbot.dev/pinbot/cmd/pinbot/cli.version=v1.2.3"
// (and .commit, .buildDate); make build and make release do.
var (
	version   = "dev"
	commit    = ""
	buildDate = ""
)

// buildInfo is what `pinbot version` prints.
type buildInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	BuildDate string `json:"buildDate"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// currentBuild reads the linker's values, falling back to what the Go
// toolchain recorded (the module version, and the VCS revision and time
// when built with VCS stamping).
func currentBuild() buildInfo {
	b := buildInfo{Version: version, Commit: commit, BuildDate: buildDate,
		GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info, ok := debug.ReadBuildInfo(); ok {
		if b.Version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			b.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch {
			case s.Key == "vcs.revision" && b.Commit == "":
				b.Commit = s.Value
			case s.Key == "vcs.time" && b.BuildDate == "":
				b.BuildDate = s.Value
			}
		}
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	if b.BuildDate == "" {
		b.BuildDate = "unknown"
	}
	return b
}

func newVersionCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print pinbot's version, commit, build date, Go version and platform",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := currentBuild()
			if g.json() {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(b)
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "pinbot %s\n  commit:   %s\n  built:    %s\n  go:       %s\n  platform: %s\n",
				b.Version, b.Commit, b.BuildDate, b.GoVersion, b.Platform)
			return err
		},
	}
}

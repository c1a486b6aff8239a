// Package buildinfo says which pinbot this is: the version, commit and
// build date the linker stamps, else what the Go toolchain recorded.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Set at build time with -ldflags "-X pinbot.dev/pinbot/internal/buildinfo.Version=v1.2.3"
// (and .Commit, .BuildDate); make build and make release do.
var (
	Version   = "dev"
	Commit    = ""
	BuildDate = ""
)

// Info is what `pinbot version` prints.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	BuildDate string `json:"buildDate"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Current reads the linker's values, falling back to what the Go
// toolchain recorded (the module version, and the VCS revision and time
// when built with VCS stamping).
func Current() Info {
	b := Info{Version: Version, Commit: Commit, BuildDate: BuildDate,
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

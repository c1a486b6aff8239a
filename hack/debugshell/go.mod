// Module debugshell builds the shell of pinbot's -debug image: make
// release compiles it for each linux platform. It is separate from
// pinbot's own go.mod so the product's dependency graph stays lean.
module pinbot.dev/pinbot/hack/debugshell

go 1.26.0

require (
	github.com/itchyny/gojq v0.12.17
	golang.org/x/term v0.48.0
	mvdan.cc/sh/v3 v3.14.1
	mvdan.cc/sh/x v0.0.0-20260922090537-aebdf2b86f56
)

require (
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/itchyny/timefmt-go v0.1.6 // indirect
	github.com/klauspost/compress v1.18.0 // indirect
	github.com/klauspost/pgzip v1.2.6 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/mattn/go-runewidth v0.0.15 // indirect
	github.com/pierrec/lz4/v4 v4.1.22 // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	github.com/u-root/u-root v0.15.1-0.20251208185023-2f8c7e763cf8 // indirect
	github.com/u-root/uio v0.0.0-20240224005618-d2acac8f3701 // indirect
	golang.org/x/sys v0.50.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

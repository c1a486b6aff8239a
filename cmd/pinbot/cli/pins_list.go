package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/pins"
)

// pinsListOptions are the flags of `pinbot pins list`.
type pinsListOptions struct {
	dir string
}

// Validate checks the flags.
func (o *pinsListOptions) Validate() error {
	if o.dir == "" {
		return usageErrorf("flag --dir: want a directory, got an empty string")
	}
	return nil
}

// pinJSON is one pin in `pins list -o json`.
type pinJSON struct {
	File    string    `json:"file"`
	Line    int       `json:"line"`
	Column  int       `json:"column"`
	Kind    pins.Kind `json:"kind"`
	Image   string    `json:"image"`
	Tag     string    `json:"tag"`
	Digest  string    `json:"digest"`
	Ignored bool      `json:"ignored"`
}

func newPinsListCommand(g *globals) *cobra.Command {
	o := &pinsListOptions{}
	cmd := &cobra.Command{
		Use:   "list [--dir DIR]",
		Short: "List every digest pin under a directory",
		Long: `List every digest pin under DIR (default: the current directory), sorted by
file, line and column. Files are named relative to DIR; line and column are
those of the digest itself. Pins frozen with a "# pinbot: ignore" comment are
listed as ignored. Malformed files are skipped with a warning on stderr.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			found, err := pins.Scan(o.dir, pinsWarnings(logctx.From(cmd.Context())))
			if err != nil {
				return err
			}
			w := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
			if g.json() {
				out := make([]pinJSON, len(found))
				for i, p := range found {
					out[i] = pinJSON{File: p.File, Line: p.Line, Column: p.Column, Kind: p.Kind,
						Image: p.Image, Tag: p.Tag, Digest: p.Digest, Ignored: p.Ignored}
				}
				if err := json.NewEncoder(w).Encode(out); err != nil {
					return err
				}
				return w.Flush()
			}
			if err := writePins(w, found); err != nil {
				return err
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&o.dir, "dir", ".", "directory to scan")
	return cmd
}

// writePins prints pins as a table, with digests shortened to 12 hex digits.
func writePins(w *bufio.Writer, found []pins.Pin) error {
	if len(found) == 0 {
		_, err := fmt.Fprintln(w, "no pins found")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FILE:LINE:COL\tKIND\tIMAGE\tTAG\tDIGEST")
	for _, p := range found {
		note := ""
		if p.Ignored {
			note = "  (ignored)"
		}
		tag := p.Tag
		if tag == "" {
			tag = "-"
		}
		fmt.Fprintf(tw, "%s:%d:%d\t%s\t%s\t%s\t%s%s\n", p.File, p.Line, p.Column, p.Kind, p.Image, tag, shortDigest(p.Digest), note)
	}
	return tw.Flush()
}

// shortDigest abbreviates "sha256:<64 hex>" to its first 12 hex digits.
func shortDigest(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	return d
}

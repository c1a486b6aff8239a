package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strconv"

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
				err = writePinsJSON(w, found)
			} else {
				err = writePins(w, found)
			}
			if err != nil {
				return err
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&o.dir, "dir", ".", "directory to scan")
	return cmd
}

// writePinsJSON streams pins as a JSON array, one object at a time, so a
// large tree's listing is never held in memory twice.
func writePinsJSON(w *bufio.Writer, found []pins.Pin) error {
	w.WriteByte('[')
	for i, p := range found {
		if i > 0 {
			w.WriteByte(',')
		}
		b, err := json.Marshal(pinJSON{File: p.File, Line: p.Line, Column: p.Column, Kind: p.Kind,
			Image: p.Image, Tag: p.Tag, Digest: p.Digest, Ignored: p.Ignored})
		if err != nil {
			return err
		}
		w.Write(b)
	}
	_, err := w.WriteString("]\n")
	return err
}

// writePins prints pins as a table, with digests shortened to 12 hex
// digits. Column widths are measured first, so rows stream out.
func writePins(w *bufio.Writer, found []pins.Pin) error {
	if len(found) == 0 {
		_, err := fmt.Fprintln(w, "no pins found")
		return err
	}
	rows := func(yield func(pos, kind, image, tag, digest, note string) bool) {
		if !yield("FILE:LINE:COL", "KIND", "IMAGE", "TAG", "DIGEST", "") {
			return
		}
		for _, p := range found {
			note, tag := "", p.Tag
			if p.Ignored {
				note = "  (ignored)"
			}
			if tag == "" {
				tag = "-"
			}
			pos := p.File + ":" + strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Column)
			if !yield(pos, string(p.Kind), p.Image, tag, shortDigest(p.Digest), note) {
				return
			}
		}
	}
	var wPos, wKind, wImage, wTag int
	rows(func(pos, kind, image, tag, _, _ string) bool {
		wPos, wKind, wImage, wTag = max(wPos, len(pos)), max(wKind, len(kind)), max(wImage, len(image)), max(wTag, len(tag))
		return true
	})
	var err error
	rows(func(pos, kind, image, tag, digest, note string) bool {
		_, err = fmt.Fprintf(w, "%-*s  %-*s  %-*s  %-*s  %s%s\n", wPos, pos, wKind, kind, wImage, image, wTag, tag, digest, note)
		return err == nil
	})
	return err
}

// shortDigest abbreviates "sha256:<64 hex>" to its first 12 hex digits.
func shortDigest(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	return d
}

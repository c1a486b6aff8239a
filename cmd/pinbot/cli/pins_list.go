package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/pins"
)

// pinsListOptions are the flags of `pinbot pins list`.
type pinsListOptions struct {
	dir      string
	vendored bool
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
listed as ignored. Every malformed YAML file is named in a warning on stderr
with the line of its error (the documents of it that parse are listed), and
unreadable files and files over 10 MiB are skipped with a warning. With -o
json, a failure also prints {"error": ..., "file": ..., "line": N} on stdout. node_modules/ and vendor/ are skipped
unless --include-vendored.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd, g)
		},
	}
	cmd.Flags().StringVar(&o.dir, "dir", ".", "directory to scan")
	cmd.Flags().BoolVar(&o.vendored, "include-vendored", false, "also list files under node_modules/ and vendor/, skipped by default")
	return cmd
}

// run lists the pins.
func (o *pinsListOptions) run(cmd *cobra.Command, g *globals) error {
	if err := o.Validate(); err != nil {
		return err
	}
	defer batchGC()()
	opts := []pins.Option{pinsWarnings(logctx.From(cmd.Context()))}
	if o.vendored {
		opts = append(opts, pins.WithVendored())
	}
	found, err := pins.Scan(o.dir, opts...)
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
}

// writePinsJSON streams pins as a JSON array, one object at a time, so a
// large tree's listing is never held in memory twice. It writes the objects
// by hand: encoding/json's reflection was a tenth of listing a large tree.
func writePinsJSON(w *bufio.Writer, found []pins.Pin) error {
	var b []byte
	w.WriteByte('[')
	for i, p := range found {
		b = b[:0]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"file":`...)
		b = appendJSONString(b, p.File)
		b = append(b, `,"line":`...)
		b = strconv.AppendInt(b, int64(p.Line), 10)
		b = append(b, `,"column":`...)
		b = strconv.AppendInt(b, int64(p.Column), 10)
		b = append(b, `,"kind":`...)
		b = appendJSONString(b, string(p.Kind))
		b = append(b, `,"image":`...)
		b = appendJSONString(b, p.Image)
		b = append(b, `,"tag":`...)
		b = appendJSONString(b, p.Tag)
		b = append(b, `,"digest":`...)
		b = appendJSONString(b, p.Digest)
		b = append(b, `,"ignored":`...)
		b = strconv.AppendBool(b, p.Ignored)
		b = append(b, '}')
		w.Write(b)
	}
	_, err := w.WriteString("]\n")
	return err
}

// appendJSONString appends s as a JSON string, as encoding/json would.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// writePins prints pins as a table, with digests shortened to 12 hex
// digits. Column widths are measured first, so rows stream out.
func writePins(w *bufio.Writer, found []pins.Pin) error {
	if len(found) == 0 {
		_, err := fmt.Fprintln(w, "no pins found")
		return err
	}
	pos := func(p pins.Pin) int { return len(clip.Name(p.File)) + 2 + digits(p.Line) + digits(p.Column) }
	width := [4]int{len("FILE:LINE:COL"), len("KIND"), len("IMAGE"), len("TAG")}
	for _, p := range found {
		width[0] = max(width[0], pos(p))
		width[1] = max(width[1], len(p.Kind))
		width[2] = max(width[2], len(p.Image))
		width[3] = max(width[3], max(len(p.Tag), 1))
	}
	cell := func(s string, n int) {
		w.WriteString(s)
		for range n - len(s) + 2 {
			w.WriteByte(' ')
		}
	}
	cell("FILE:LINE:COL", width[0])
	cell("KIND", width[1])
	cell("IMAGE", width[2])
	cell("TAG", width[3])
	w.WriteString("DIGEST\n")
	var b []byte
	for _, p := range found {
		b = append(b[:0], clip.Name(p.File)...)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(p.Line), 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(p.Column), 10)
		for range width[0] - len(b) + 2 {
			b = append(b, ' ')
		}
		w.Write(b)
		tag := p.Tag
		if tag == "" {
			tag = "-"
		}
		cell(string(p.Kind), width[1])
		cell(p.Image, width[2])
		cell(tag, width[3])
		w.WriteString(imageref.Short(p.Digest))
		if p.Ignored {
			w.WriteString("  (ignored)")
		}
		if err := w.WriteByte('\n'); err != nil {
			return err
		}
	}
	return nil
}

// digits returns the number of decimal digits of n >= 0.
func digits(n int) int {
	d := 1
	for ; n >= 10; n /= 10 {
		d++
	}
	return d
}

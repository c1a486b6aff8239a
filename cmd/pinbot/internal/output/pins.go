package output

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/pins"
)

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

// PinsJSON streams pins as a JSON array, one object at a time, so a
// large tree's listing is never held in memory twice. It writes the objects
// by hand: encoding/json's reflection was a tenth of listing a large tree.
func PinsJSON(w *bufio.Writer, found []pins.Pin) error {
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

// Pins prints pins as a table, with digests shortened to 12 hex
// digits. Column widths are measured first, so rows stream out.
func Pins(w *bufio.Writer, found []pins.Pin) error {
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

// Skip is one pin left out of scope in `pins set -o json`.
type Skip struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Tag    string `json:"tag"`
	Reason string `json:"reason"`
}

// Change is one changed line in `pins set -o json`.
type Change struct {
	File      string    `json:"file"`
	Line      int       `json:"line"`
	Kind      pins.Kind `json:"kind"`
	Image     string    `json:"image"`
	OldDigest string    `json:"oldDigest"`
	NewDigest string    `json:"newDigest"`
	OldTag    string    `json:"oldTag,omitempty"`
	NewTag    string    `json:"newTag,omitempty"`
	Before    string    `json:"before"`
	After     string    `json:"after"`
}

// writeChanges prints each changed line as a -/+ pair, then a summary.
func writeChanges(w io.Writer, changes []pins.Change, u pins.Update, dryRun bool) error {
	if len(changes) == 0 {
		_, err := fmt.Fprintf(w, "nothing to change: no pin of %s differs from %s\n", u.Image, u.Digest)
		return err
	}
	files := map[string]bool{}
	for _, c := range changes {
		files[c.File] = true
		if c.Before != "" {
			fmt.Fprintf(w, "%s:%d  - %s\n", clip.Name(c.File), c.Line, c.Before)
		}
		if _, err := fmt.Fprintf(w, "%s:%d  + %s\n", clip.Name(c.File), c.Line, c.After); err != nil {
			return err
		}
	}
	verb := "changed"
	if dryRun {
		verb = "would change (dry run)"
	}
	_, err := fmt.Fprintf(w, "%s %d lines in %d files\n", verb, len(changes), len(files))
	return err
}

// writeSkipped prints a line per pin left out of the set's scope.
func writeSkipped(w io.Writer, skipped []pins.Skip) error {
	for _, s := range skipped {
		tag := s.Tag
		if tag == "" {
			tag = "-"
		}
		if _, err := fmt.Fprintf(w, "skipped %s:%d (tag %s): %s\n", clip.Name(s.File), s.Line, tag, s.Reason); err != nil {
			return err
		}
	}
	return nil
}

// PinsSet prints what `pinbot pins set` changed (or, under dryRun, would
// change), the Helm forms it could not check, and the pins it skipped.
func PinsSet(w io.Writer, asJSON bool, u pins.Update, dryRun bool, changes []pins.Change, skipped []pins.Skip, unverified []string) error {
	if asJSON {
		out := struct {
			Changes    []Change `json:"changes"`
			Skipped    []Skip   `json:"skipped"`
			Unverified []string `json:"unverified,omitempty"`
		}{Changes: make([]Change, len(changes)), Skipped: make([]Skip, len(skipped)), Unverified: unverified}
		for i, s := range skipped {
			out.Skipped[i] = Skip{File: s.File, Line: s.Line, Tag: s.Tag, Reason: s.Reason}
		}
		for i, c := range changes {
			out.Changes[i] = Change{File: c.File, Line: c.Line, Kind: c.Kind, Image: c.Image,
				OldDigest: c.OldDigest, NewDigest: c.NewDigest, OldTag: c.OldTag, NewTag: c.NewTag,
				Before: c.Before, After: c.After}
		}
		return json.NewEncoder(w).Encode(out)
	}
	if err := writeChanges(w, changes, u, dryRun); err != nil {
		return err
	}
	for _, n := range unverified {
		if _, err := fmt.Fprintln(w, n); err != nil {
			return err
		}
	}
	return writeSkipped(w, skipped)
}

package output

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"

	"sigs.k8s.io/yaml"
)

// Writer is stdout. Under -o yaml it turns the stream of JSON
// documents a command writes (its -o json output) into YAML documents,
// separated by "---", as each one completes: every command gets YAML with
// the same field names as its JSON, as kubectl's -o yaml has.
type Writer struct {
	w    io.Writer
	mu   sync.Mutex
	pw   *io.PipeWriter
	done chan struct{}
	n    int64 // bytes written through it
}

// NewWriter returns a Writer to w that passes writes through until
// ToYAML.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// ToYAML starts converting; called once the flags are parsed.
func (o *Writer) ToYAML() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.pw != nil {
		return
	}
	pr, pw := io.Pipe()
	o.pw, o.done = pw, make(chan struct{})
	go func() {
		defer close(o.done)
		convertJSONStream(pr, o.w)
	}()
}

// Write writes p, or converts it once ToYAML was called.
func (o *Writer) Write(p []byte) (int, error) {
	o.mu.Lock()
	pw := o.pw
	o.n += int64(len(p))
	o.mu.Unlock()
	if pw == nil {
		return o.w.Write(p)
	}
	return pw.Write(p)
}

// Written reports whether anything was written through o.
func (o *Writer) Written() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n > 0
}

// Close flushes the conversion, if any.
func (o *Writer) Close() {
	o.mu.Lock()
	pw, done := o.pw, o.done
	o.mu.Unlock()
	if pw != nil {
		_ = pw.Close()
		<-done
	}
}

// convertJSONStream writes each JSON value read from r to w as a YAML
// document. Input that is not JSON is copied as it is, so nothing a
// command prints is lost. It drains r to the end.
func convertJSONStream(r io.Reader, w io.Writer) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	for n := 0; ; n++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			return
		}
		if err != nil {
			rest, _ := io.ReadAll(io.MultiReader(dec.Buffered(), r))
			_, _ = w.Write(bytes.TrimLeft(rest, " \t\r\n"))
			return
		}
		out, err := yaml.JSONToYAML(raw)
		if err != nil {
			out = append(bytes.TrimSpace(raw), '\n')
		}
		if n > 0 {
			_, _ = io.WriteString(w, "---\n")
		}
		_, _ = w.Write(out)
	}
}

// Package logsink makes pinbot's one logger: every line pinbot and the
// libraries it runs write (client-go's reflectors and leader election log
// through klog) goes through one slog handler, in one format, with every
// registered secret removed (package redact).
package logsink

import (
	"encoding"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"pinbot.dev/pinbot/internal/redact"
)

// New returns a logger writing to w as logfmt text, or as one JSON object
// a line when json is set. String values, errors and the message are
// redacted; durations print as Go durations ("25s"), not nanoseconds.
func New(w io.Writer, json bool, level slog.Leveler) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: clean}
	if json {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// clean is the handlers' ReplaceAttr.
func clean(_ []string, a slog.Attr) slog.Attr {
	switch a.Value.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(redact.String(a.Value.String()))
	case slog.KindDuration:
		a.Value = slog.StringValue(a.Value.Duration().String())
	case slog.KindAny:
		switch v := a.Value.Any().(type) {
		case error:
			a.Value = slog.StringValue(redact.String(v.Error()))
		case fmt.Stringer:
			a.Value = slog.StringValue(redact.String(v.String()))
		case encoding.TextMarshaler:
			if b, err := v.MarshalText(); err == nil {
				a.Value = slog.StringValue(redact.String(string(b)))
			}
		case []byte:
			a.Value = slog.StringValue(redact.String(string(v)))
		case time.Duration:
			a.Value = slog.StringValue(v.String())
		}
	}
	return a
}

// Klog sends what client-go and the other Kubernetes libraries log through
// klog to l, instead of klog's own lines on stderr, which would bypass
// redaction and break --log-format json. It is process-wide, as klog is.
func Klog(l *slog.Logger) {
	klog.SetLogger(logr.FromSlogHandler(l.Handler()))
}

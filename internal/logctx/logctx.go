// Package logctx carries one structured logger in a context, so library
// packages log only when their caller handed them a logger.
package logctx

import (
	"context"
	"io"
	"log/slog"
)

type key struct{}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// Into returns a context that carries logger.
func Into(ctx context.Context, logger *slog.Logger) context.Context {
	return context.WithValue(ctx, key{}, logger)
}

// From returns the logger ctx carries, or one that discards everything.
func From(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(key{}).(*slog.Logger); ok && l != nil {
		return l
	}
	return discard
}

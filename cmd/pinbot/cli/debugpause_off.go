//go:build !pinbotdebug

package cli

import (
	"context"
	"io"
)

// pauseAt does nothing in a release build: the test pause points exist
// only with -tags pinbotdebug (see debugpause.go).
func pauseAt(context.Context, io.Writer, string) {}

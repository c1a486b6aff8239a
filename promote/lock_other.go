//go:build !unix

package promote

import (
	"context"
	"errors"
)

// lockFile is unsupported here: use no clone cache.
func lockFile(context.Context, string) (func(), error) {
	return nil, errors.New("the clone cache needs file locks, which this system lacks; use no cache dir")
}

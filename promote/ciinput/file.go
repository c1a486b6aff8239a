package ciinput

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"pinbot.dev/pinbot/internal/clip"
)

// Size limits of the CI files promote reads, far above what Kaniko and
// buildx write. A larger file is refused before it is parsed: reading a
// 300 MB file as a digest file took minutes and gigabytes.
const (
	// maxDigestFile bounds a Kaniko --digest-file (71 bytes in practice).
	maxDigestFile = 4 << 10
	// maxImageNameFile bounds a Kaniko --image-name-with-digest-file (one
	// short line per destination).
	maxImageNameFile = 64 << 10
	// maxMetadataFile bounds a buildx --metadata-file, which may carry
	// provenance and, for bake, one object per target.
	maxMetadataFile = 4 << 20
	// maxRefLen bounds one image reference: a repository is at most 255
	// bytes, a tag 128 and a digest 71.
	maxRefLen = 512
)

// errInputTooLarge reports a CI file or value above its size limit.
var errInputTooLarge = errors.New("too large")

// readInput reads file with read, or, when read is nil, from disk without
// ever holding more than limit+1 bytes of it. what names the kind of file
// in the error.
func readInput(read func(string) ([]byte, error), file, what string, limit int) ([]byte, error) {
	var data []byte
	var err error
	if read != nil {
		data, err = read(file)
	} else {
		data, err = readAtMost(file, limit+1)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", what, file, err)
	}
	if len(data) > limit {
		return nil, fmt.Errorf("%s: %w: a %s is at most %d bytes", file, errInputTooLarge, what, limit)
	}
	return data, nil
}

// readAtMost reads up to n bytes of file.
func readAtMost(file string, n int) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, int64(n)))
}

// checkRefLen refuses a value too long to be an image reference before it
// is parsed, so that the error quotes it once and clipped.
func checkRefLen(ref string) error {
	if len(ref) > maxRefLen {
		return fmt.Errorf("image reference %s: %w: at most %d bytes", clip.Quote(ref), errInputTooLarge, maxRefLen)
	}
	return nil
}

// jsonError prefixes a JSON decoding error with file:line where the
// error carries an offset.
func jsonError(file string, data []byte, what string, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 || off > int64(len(data)) {
		return fmt.Errorf("%s: %s: %w", file, what, err)
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	return fmt.Errorf("%s:%d: %s: %w", file, line, what, err)
}

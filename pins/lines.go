package pins

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// lineTable maps between byte offsets and 1-based line and column numbers
// the way yaml.v3 counts them: "\r\n", "\r", "\n", NEL, LS and PS each end
// a line, columns count characters, and a leading byte order mark is not
// part of line 1.
type lineTable struct {
	src    []byte
	starts []int // starts[i] is the offset of line i+1
}

func newLineTable(src []byte) *lineTable {
	t := &lineTable{src: src, starts: make([]int, 1, bytes.Count(src, []byte{'\n'})+2)}
	if len(src) >= 3 && src[0] == 0xEF && src[1] == 0xBB && src[2] == 0xBF {
		t.starts[0] = 3
	}
	if bytes.IndexByte(src, '\r') < 0 && bytes.IndexByte(src, 0xC2) < 0 && bytes.IndexByte(src, 0xE2) < 0 {
		// Only "\n" breaks: let IndexByte find them.
		for i := t.starts[0]; ; {
			j := bytes.IndexByte(src[i:], '\n')
			if j < 0 {
				return t
			}
			i += j + 1
			t.starts = append(t.starts, i)
		}
	}
	for i := t.starts[0]; i < len(src); {
		n := breakLen(src, i)
		if n == 0 {
			i++
			continue
		}
		i += n
		t.starts = append(t.starts, i)
	}
	return t
}

// breakLen returns the length of the line break at src[i], or 0.
func breakLen(src []byte, i int) int {
	switch c := src[i]; {
	case c == '\n':
		return 1
	case c == '\r':
		if i+1 < len(src) && src[i+1] == '\n' {
			return 2
		}
		return 1
	case c == 0xC2:
		if i+1 < len(src) && src[i+1] == 0x85 {
			return 2
		}
	case c == 0xE2:
		if i+2 < len(src) && src[i+1] == 0x80 && (src[i+2] == 0xA8 || src[i+2] == 0xA9) {
			return 3
		}
	}
	return 0
}

// offset converts a 1-based line and column to a byte offset, or -1.
func (t *lineTable) offset(line, col int) int {
	if line < 1 || line > len(t.starts) || col < 1 {
		return -1
	}
	off := t.starts[line-1]
	end := t.lineEnd(line)
	for c := 1; c < col; c++ {
		if off >= end {
			return -1
		}
		_, n := utf8.DecodeRune(t.src[off:end])
		off += n
	}
	return off
}

// position converts a byte offset to a 1-based line and column.
func (t *lineTable) position(off int) (line, col int) {
	lo, hi := 0, len(t.starts)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if t.starts[mid] <= off {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo + 1, utf8.RuneCount(t.src[t.starts[lo]:off]) + 1
}

// lineEnd returns the offset just past the text of a line, before its break.
func (t *lineTable) lineEnd(line int) int {
	if line >= len(t.starts) {
		return len(t.src)
	}
	next, src := t.starts[line], t.src
	switch {
	case next >= 2 && src[next-2] == '\r' && src[next-1] == '\n':
		return next - 2
	case src[next-1] == '\n' || src[next-1] == '\r':
		return next - 1
	case next >= 2 && src[next-2] == 0xC2 && src[next-1] == 0x85:
		return next - 2
	}
	return next - 3 // LS or PS
}

// text returns a line without its break.
func (t *lineTable) text(line int) string {
	return string(t.src[t.starts[line-1]:t.lineEnd(line)])
}

// lineBreak returns the break ending a line, or "" for the last line.
func (t *lineTable) lineBreak(line int) string {
	if line >= len(t.starts) {
		return ""
	}
	return string(t.src[t.lineEnd(line):t.starts[line]])
}

// lineStarts appends to starts the offset after each "\n" in src, and
// reports whether src holds only printable ASCII and "\n". It looks at
// eight bytes at a time, since it is the one pass over every byte.
func lineStarts(src []byte, starts []int) ([]int, bool) {
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
		low7 = 0x7f7f7f7f7f7f7f7f
		nl   = 0x0a0a0a0a0a0a0a0a
	)
	i := 0
	for ; i+8 <= len(src); i += 8 {
		w := binary.LittleEndian.Uint64(src[i:])
		// Mark each "\n" byte with exactly 0x80, then make it 0x2a.
		x := w ^ nl
		z := ^(((x & low7) + low7) | x | low7)
		w |= z >> 2
		// Any byte below 0x20, or above 0x7e?
		if (w-0x20*ones)&^w&high|((w+ones)|w)&high != 0 {
			return starts, false
		}
		for ; z != 0; z &= z - 1 {
			starts = append(starts, i+bits.TrailingZeros64(z)/8+1)
		}
	}
	for ; i < len(src); i++ {
		switch c := src[i]; {
		case c == '\n':
			starts = append(starts, i+1)
		case c >= 0x7f || c < 0x20:
			return starts, false
		}
	}
	return starts, true
}

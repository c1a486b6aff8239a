package pins

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseFastRandom compares the fast parser with yaml.v3 on documents
// built from the line shapes manifests are made of, at random
// indentations, which reach the fast parser's accept paths far more often
// than byte mutation does. FuzzParse covers arbitrary bytes.
func TestParseFastRandom(t *testing.T) {
	good := []string{
		"key: value", "image: nginx@sha256:" + strings.Repeat("a", 64), "ref: 'nginx:1@sha256:" + strings.Repeat("a", 64) + "'", "- nginx@sha256:" + strings.Repeat("b", 64), "k: [x@sha256:" + strings.Repeat("c", 64) + ", y]", "key:", "- item", "-", "- key: v", "- - x",
		"key: |", "key: >-", "- |+", "text line", "text: 'q'", `text: "dq"`, "k: [a, b]", "k: {a: 1, b: [c]}",
		"k: []", "- {}", "# comment", "", "---", "k: a # c", "k: a#b", "k:  ", "  ", "k: [\"a\", 'b', c:d]",
		"k: {\"a\": b}", "k: v # pinbot: ignore", "k: &a v", "k: *a", "image: *a", "- &b [x]", "- *b", "image: &c 'q'", "k: a,b", "k: [a,]", "k: {a: b,}", "k: | # c", "- k:", "k: -x",
	}
	bad := []string{
		"k: a: b", "k: 'it''s'", `k: "a\"b"`, "k: v:", "k: - x", "k: ?x", "key : v", "k: [a, b", "k: {a}",
		"k: [a: 1]", "k: !!str x", "k: &a", "k: *zz", "k: &a &b x", "...", "%YAML 1.2", "-x", ":x", "k: [a b]", "k: |x", "k: >2",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	accepted := 0
	for i := range 40000 {
		var b strings.Builder
		for range 1 + rng.IntN(10) {
			b.WriteString(strings.Repeat(" ", rng.IntN(4)*rng.IntN(3)))
			if rng.IntN(20) == 0 {
				b.WriteString(bad[rng.IntN(len(bad))])
			} else {
				b.WriteString(good[rng.IntN(len(good))])
			}
			b.WriteByte('\n')
		}
		src := []byte(b.String())
		if i%7 == 0 {
			src = src[:len(src)-1]
		}
		if checkFast(t, src) {
			accepted++
		}
	}
	if accepted < 2000 {
		t.Errorf("the fast parser accepted only %d of 40000 documents", accepted)
	}
	t.Logf("fast parser accepted %d of 40000 documents", accepted)
}

// checkLineStarts compares lineStarts with newLineTable and a byte loop.
func checkLineStarts(t *testing.T, src []byte, printable bool) {
	t.Helper()
	starts, ok := lineStarts(src, []int{0})
	if ok != printable {
		t.Fatalf("lineStarts(%q) ok = %v, want %v", src, ok, printable)
	}
	if ok {
		if diff := cmp.Diff(newLineTable(src).starts, starts); diff != "" {
			t.Fatalf("lineStarts(%q) (-newLineTable +lineStarts):\n%s", src, diff)
		}
	}
}

// TestLineStartsExhaustive puts every byte value at every position of a
// line, with and without line breaks around it, and checks the word-at-a-
// time scan against a byte loop.
func TestLineStartsExhaustive(t *testing.T) {
	printable := func(b []byte) bool {
		for _, c := range b {
			if c >= 0x7f || c < 0x20 && c != '\n' {
				return false
			}
		}
		return true
	}
	line := []byte("abcdefghijklmnopqrstuvwxyz012345")
	for pos := range line {
		for c := range 256 {
			b := append([]byte(nil), line...)
			b[pos] = byte(c)
			for _, sub := range [][]byte{b, b[1:], b[3:], b[:pos+1]} {
				checkLineStarts(t, sub, printable(sub))
			}
			b[(pos+1)%len(b)] = '\n'
			b[(pos+9)%len(b)] = '\n'
			checkLineStarts(t, b, printable(b))
		}
	}
}

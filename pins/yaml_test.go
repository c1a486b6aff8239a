package pins

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestErrorLines checks that a YAML error names the offending line, not
// the start of the construct yaml.v3 was in, nor one line too low (as
// yaml.v3 does for flow collections), nor a template document's "---".
func TestErrorLines(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []int // the broken parts' lines
	}{
		{"bad token", "a: 1\nb:\n  c: 2\n  d: 3\n  e: 4\n  f: @bad\n  g: 5\n", []int{6}},
		{"bad indentation", "a: 1\nb:\n  c: 2\n  d: 3\n  e: 4\n f: x\n", []int{6}},
		{"unclosed flow sequence", "a: 1\nb: [x, y\nc: 3\n", []int{2}},
		{"unclosed flow mapping", "a: 1\nb: {x: 1\nc: 3\n", []int{2}},
		{"flow in a pod", "kind: Pod\nspec:\n  containers:\n  - image: nginx\n    args: [unclosed\n", []int{5}},
		{"template document", "kind: A\n---\n{{- if .Values.x }}\napiVersion: v1\n{{- end }}\n", []int{3}},
		{"two template documents", "{{- if .a }}\nkind: A\n{{- end }}\n---\nkind: B\n---\nkind: C\n  {{ end }}: x\n", []int{1, 8}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, broken := fileSites("f.yaml", ftYAML, []byte(tc.src), nil)
			var got []int
			for _, b := range broken {
				got = append(got, b.line)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("error lines (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPartialFileSites lists the pins of the documents that parse.
func TestPartialFileSites(t *testing.T) {
	src := "image: nginx@" + digestA + "\n---\n{{ if }}\n  x: [\n---\nimage: redis:7@" + digestB + "\n"
	sites, _, broken := fileSites("f.yaml", ftYAML, []byte(src), nil)
	var got []string
	for _, s := range sites {
		got = append(got, s.image+"@"+s.digest)
	}
	want := []string{"index.docker.io/library/nginx@" + digestA, "index.docker.io/library/redis@" + digestB}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sites (-want +got):\n%s", diff)
	}
	if len(broken) != 1 || broken[0].line < 3 || broken[0].line > 4 {
		t.Errorf("broken = %+v, want one part at line 3 or 4", broken)
	}
	if sites[1].line != 6 {
		t.Errorf("redis pin at line %d, want 6", sites[1].line)
	}
}

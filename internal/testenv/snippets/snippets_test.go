package snippets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	md := "# Doc\n\n```sh\necho one\n```\n\n<!-- not run: needs a kubelet -->\n```sh\nkubectl port-forward svc/x 8080:80\n```\n\n" +
		"```groovy\nstage('P') {\n  sh '''\n    pinbot promote --repo a/b\n  '''\n}\n```\n\n" +
		"```yaml\njobs:\n  build:\n    steps:\n      - uses: actions/checkout@v4\n      - name: promote\n        run: |\n          ./pinbot promote\n```\n"
	path := filepath.Join(t.TempDir(), "doc.md")
	if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	blocks, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	sh := Lang(blocks, "sh")
	if len(blocks) != 4 || len(sh) != 2 {
		t.Fatalf("read %d blocks, %d sh; want 4, 2: %+v", len(blocks), len(sh), blocks)
	}
	if sh[0].Text != "echo one\n" || sh[0].NotRun != "" || sh[0].Line != 3 {
		t.Errorf("first block %+v", sh[0])
	}
	if sh[1].NotRun != "needs a kubelet" {
		t.Errorf("second block's reason %q, want the comment's", sh[1].NotRun)
	}
	if got := GroovySh(blocks[2]); len(got) != 1 || strings.TrimSpace(got[0]) != "pinbot promote --repo a/b" {
		t.Errorf("GroovySh = %q", got)
	}
	if run, err := WorkflowRun(blocks[3], "promote"); err != nil || run != "./pinbot promote\n" {
		t.Errorf("WorkflowRun = %q, %v", run, err)
	}
	if _, err := WorkflowRun(blocks[3], "deploy"); err == nil || !strings.Contains(err.Error(), `"deploy"`) {
		t.Errorf("WorkflowRun of a missing step: %v", err)
	}

	for name, bad := range map[string]string{
		"unclosed":  "```sh\necho\n",
		"no reason": "<!-- not run: -->\n```sh\necho\n```\n",
	} {
		p := filepath.Join(t.TempDir(), name+".md")
		if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(p); err == nil || !strings.Contains(err.Error(), p+":") {
			t.Errorf("%s: %v, want an error naming the file and line", name, err)
		}
	}
}

package flags

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pinbot.dev/pinbot/trust/trusttest"
)

func TestSignaturePolicyFlag(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cosign.pub"), trusttest.NewKey(t, "ecdsa").PublicPEM(t), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("policy.yaml", "signatures:\n  - images: [\"r.example/acme/*\"]\n    keys: [cosign.pub]\n")
	if v, err := (&Policy{file: good}).Verifier(); err != nil || v == nil {
		t.Fatalf("a valid policy: %v, %v", v, err)
	}
	if v, err := (&Policy{}).Verifier(); err != nil || v != nil {
		t.Errorf("no flag: %v, %v; want no policy", v, err)
	}
	for name, tc := range map[string]struct{ content, want string }{
		"empty":         {"signatures: []\n", "no signatures: rules, which would check nothing"},
		"unknown field": {"signatures:\n  - images: [x]\n    key: [cosign.pub]\n", "field key not found"},
		"missing key":   {"signatures:\n  - images: [\"r.example/*\"]\n    keys: [nope.pub]\n", "nope.pub"},
	} {
		_, err := (&Policy{file: write(strings.ReplaceAll(name, " ", "-")+".yaml", tc.content)}).Verifier()
		if err == nil || !strings.Contains(err.Error(), "flag --signature-policy") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a usage error with %q", name, err, tc.want)
		}
	}
}

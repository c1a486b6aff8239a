package serve

import (
	"strings"
	"testing"
)

func TestAdmissionConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    Admission
		want string // "" for valid
	}{
		{"audit", Admission{Listen: ":9443", CertFile: "tls.crt", KeyFile: "tls.key"}, ""},
		{"enforce", Admission{Mode: "enforce", Listen: ":9443", CertFile: "tls.crt", KeyFile: "tls.key"}, ""},
		{"a mode of its own", Admission{Mode: "strict", Listen: ":9443", CertFile: "tls.crt", KeyFile: "tls.key"}, `admission.mode "strict": want audit or enforce`},
		{"no listen", Admission{CertFile: "tls.crt", KeyFile: "tls.key"}, "admission.listen: required"},
		{"no certificate", Admission{Listen: ":9443"}, "admission.certFile and admission.keyFile: required"},
	} {
		got := strings.Join(tc.a.problems(), "\n")
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: problems %q, want %q", tc.name, got, tc.want)
		}
	}
}

package flags

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pinbot.dev/pinbot/release/proofapi"
)

// TestGateTrustsTheCAFile: --ca-file reaches the gate's client, as it
// reaches the forge's and the registry's: serve's gate behind a private
// CA answers with it, and is refused without it.
func TestGateTrustsTheCAFile(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer gate-token-123" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(proofapi.Answer{Verified: true})
	}))
	defer srv.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("gate-token-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := Gate{url: srv.URL, tokenFile: token}
	for _, tc := range []struct {
		name, caFile string
		wantErr      string
	}{
		{"with the CA", ca, ""},
		{"without it", "", "certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := f.Admitter("o/r", tc.caFile)
			if err != nil {
				t.Fatal(err)
			}
			a, err := g.(proofapi.Admit).Asker.Ask(t.Context(), proofapi.Query{Env: "staging", Image: "r.example/web", Digest: "sha256:" + strings.Repeat("a", 64)})
			switch {
			case tc.wantErr == "" && (err != nil || !a.Verified):
				t.Errorf("Ask = %+v, %v; want verified", a, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Ask = %v, want an error about the %s", err, tc.wantErr)
			}
		})
	}
}

package registry

import (
	"context"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
)

// TestWithCAFile: a registry behind a private CA is refused with the
// system roots alone and trusted with WithCAFile; the option goes with
// the default transport only.
func TestWithCAFile(t *testing.T) {
	isolateDockerConfig(t, "")
	h := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	raw := httptest.NewServer(h)
	t.Cleanup(raw.Close)
	private := httptest.NewUnstartedServer(h)
	private.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	private.StartTLS()
	t.Cleanup(private.Close)
	want := (&testRegistry{raw: hostOf(raw)}).push(t, "team/app:v1", buildImage(t, imageSpec{}))

	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: private.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	ref := strings.TrimPrefix(private.URL, "https://") + "/team/app:v1"
	ctx := context.Background()
	if _, err := newClient(t, WithRetry(0)).Resolve(ctx, ref); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA: %v, want a certificate error", err)
	}
	d, err := newClient(t, WithCAFile(ca)).Resolve(ctx, ref)
	if err != nil || d.Digest != want.String() {
		t.Errorf("with the CA: %+v, %v; want %s", d, err, want)
	}

	if _, err := New(WithCAFile(ca), WithTransport(http.DefaultTransport)); err == nil || !strings.Contains(err.Error(), "WithCAFile and WithTransport") {
		t.Errorf("WithCAFile with WithTransport: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(empty, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(WithCAFile(empty)); err == nil || !strings.Contains(err.Error(), "WithCAFile") || !strings.Contains(err.Error(), empty) {
		t.Errorf("a CA file with no certificate: %v", err)
	}
}

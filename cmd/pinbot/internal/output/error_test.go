package output

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// TestFailedHintsAtTheCA: an unknown authority, however wrapped, gets one
// line saying which CA to pass; any other error gets none.
func TestFailedHintsAtTheCA(t *testing.T) {
	unknown := fmt.Errorf("app web: %w", &url.Error{Op: "Get", URL: "https://gitea.example/api/v1/version",
		Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}})
	var buf bytes.Buffer
	Failed(&buf, unknown)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "pinbot: app web:") || !strings.Contains(lines[1], "--ca-file") || !strings.Contains(lines[1], "SSL_CERT_FILE") {
		t.Errorf("an unknown authority printed:\n%s\nwant the error, then one hint naming --ca-file and SSL_CERT_FILE", buf.String())
	}
	buf.Reset()
	Failed(&buf, errors.New("app web: not found"))
	if got := buf.String(); got != "pinbot: app web: not found\n" {
		t.Errorf("another error printed %q", got)
	}
}

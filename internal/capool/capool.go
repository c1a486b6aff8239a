// Package capool is pinbot's one home for trusting a private CA: the
// system's roots plus a PEM bundle, for the TLS clients of Gitea, Git
// remotes and Argo CD's API server.
package capool

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// FromPEM is the system's roots plus the certificates of pem, read from
// name (for errors). A bundle with no certificate is an error.
func FromPEM(name string, pem []byte) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("reading CA bundle %s: no PEM certificate in it", name)
	}
	return pool, nil
}

// Load is FromPEM of the file at path.
func Load(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading CA bundle: %w", err)
	}
	return FromPEM(path, pem)
}

// TLS is a client TLS config that trusts pool, TLS 1.2 at least.
func TLS(pool *x509.CertPool) *tls.Config {
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

package kube

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// pki is the key material one cluster runs with, written under dir/pki.
type pki struct {
	caPEM        []byte
	caFile       string // CA that signed the API server's serving certificate
	certFile     string // API server serving certificate
	keyFile      string // API server serving key
	saKeyFile    string // service-account signing key (RSA, private)
	tokenFile    string // static token authentication file
	tokens       map[string]string
	adminToken   string
	managerToken string
}

// controllerManagerUser is the identity kube-controller-manager runs as. It
// is in system:masters because it runs every controller with its own
// credentials (--use-service-account-credentials=false).
const controllerManagerUser = "system:kube-controller-manager"

// writePKI generates a CA, a serving certificate for loopback, the
// service-account signing key and one random bearer token per user.
func writePKI(dir string, users []User) (*pki, error) {
	dir = filepath.Join(dir, "pki")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	p := &pki{
		caFile:    filepath.Join(dir, "ca.crt"),
		certFile:  filepath.Join(dir, "apiserver.crt"),
		keyFile:   filepath.Join(dir, "apiserver.key"),
		saKeyFile: filepath.Join(dir, "sa.key"),
		tokenFile: filepath.Join(dir, "tokens.csv"),
		tokens:    map[string]string{},
	}

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating CA key: %w", err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "pinbot-testenv-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("creating CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("parsing CA certificate: %w", err)
	}
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating serving key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.ParseIP("10.0.0.1")},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("creating serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding serving key: %w", err)
	}

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("generating service-account key: %w", err)
	}

	p.adminToken, err = randomToken()
	if err != nil {
		return nil, err
	}
	p.managerToken, err = randomToken()
	if err != nil {
		return nil, err
	}
	lines := []string{
		tokenLine(p.adminToken, AdminUser, []string{"system:masters"}),
		tokenLine(p.managerToken, controllerManagerUser, []string{"system:masters"}),
	}
	for _, u := range users {
		tok, err := randomToken()
		if err != nil {
			return nil, err
		}
		p.tokens[u.Name] = tok
		lines = append(lines, tokenLine(tok, u.Name, u.Groups))
	}

	files := []struct {
		path string
		data []byte
	}{
		{p.caFile, p.caPEM},
		{p.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})},
		{p.keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})},
		{p.saKeyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)})},
		{p.tokenFile, []byte(strings.Join(lines, "\n") + "\n")},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return nil, fmt.Errorf("writing %s: %w", f.path, err)
		}
	}
	return p, nil
}

// tokenLine is one line of a kube-apiserver --token-auth-file:
// token,user,uid,"group1,group2".
func tokenLine(token, user string, groups []string) string {
	line := token + "," + user + "," + user
	if len(groups) > 0 {
		line += `,"` + strings.Join(groups, ",") + `"`
	}
	return line
}

func randomToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

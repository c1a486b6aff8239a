package admission

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The insider suite of the admission port: anything that reaches it.

// issuer is a CA for the tests' certificates.
type issuer struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newIssuer(t *testing.T, name string) issuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return issuer{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a leaf certificate for name, as a server (127.0.0.1) or a
// client, and returns it as a tls.Certificate and as PEM files in dir.
func (ca issuer) issue(t *testing.T, dir, name string, server bool) (tls.Certificate, string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage, tmpl.IPAddresses = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})
	certFile, keyFile := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return pair, certFile, keyFile
}

// TestAdmissionPortAuthenticatesTheAPIServer: with admission.clientCAFile,
// only a caller whose certificate that CA signed gets a review read;
// one with no certificate, or one of another CA (a Pod that reaches the
// port), is refused in the handshake. Without the setting, the fake
// reviews of the flood reached the judge.
func TestAdmissionPortAuthenticatesTheAPIServer(t *testing.T) {
	dir := t.TempDir()
	servingCA, apiserverCA, strangerCA := newIssuer(t, "serving"), newIssuer(t, "apiserver clients"), newIssuer(t, "stranger")
	_, certFile, keyFile := servingCA.issue(t, dir, "webhook", true)
	apiserver, _, _ := apiserverCA.issue(t, dir, "kube-apiserver", false)
	stranger, _, _ := strangerCA.issue(t, dir, "flood", false)
	caFile := filepath.Join(dir, "client-ca.crt")
	if err := os.WriteFile(caFile, apiserverCA.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	a := New(Options{Listen: "127.0.0.1:0", CertFile: certFile, KeyFile: keyFile, ClientCAFile: caFile})
	if err := a.loadClientCAs(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: a, ErrorLog: log.New(io.Discard, "", 0)}
	go hs.Serve(tls.NewListener(ln, a.tlsConfig()))
	defer hs.Close()
	url := "https://" + ln.Addr().String()

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(servingCA.pem)
	post := func(certs []tls.Certificate) (int, error) {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs}}}
		resp, err := c.Post(url+Path, "application/json", strings.NewReader(`{}`))
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	// The API server's certificate: the body is read (and is no review).
	if code, err := post([]tls.Certificate{apiserver}); err != nil || code != http.StatusBadRequest {
		t.Errorf("the API server's certificate: %d, %v; want the body read (400)", code, err)
	}
	for name, certs := range map[string][]tls.Certificate{"no certificate": nil, "another CA's": {stranger}} {
		if code, err := post(certs); err == nil {
			t.Errorf("%s: answered %d, want the handshake refused", name, code)
		}
	}
}

// TestAdmissionBoundsReviewsInFlight: with every place taken, a review
// waits, and is dropped unread when its caller gives up.
func TestAdmissionBoundsReviewsInFlight(t *testing.T) {
	a := New(Options{})
	for range maxReviewsInFlight {
		a.slots <- struct{}{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	body := &countingReader{r: strings.NewReader(`{}`)}
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, Path, body)
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable || body.n != 0 {
		t.Errorf("with no place: %d, %d bytes read; want 503, nothing read", rec.Code, body.n)
	}
}

type countingReader struct {
	r interface{ Read([]byte) (int, error) }
	n int
}

func (c *countingReader) Read(p []byte) (int, error) { n, err := c.r.Read(p); c.n += n; return n, err }

// TestAdmissionEnforceRefusesWhatItCannotJudge: in enforce mode a review
// the webhook cannot judge is refused, saying why, rather than answered
// with an error the API server's failurePolicy: Ignore would admit.
func TestAdmissionEnforceRefusesWhatItCannotJudge(t *testing.T) {
	for _, mode := range []string{"enforce", "audit"} {
		a := New(Options{Enforce: mode == "enforce"})
		review := admissionv1.AdmissionReview{Request: &admissionv1.AdmissionRequest{UID: "u1", Operation: admissionv1.Create,
			Object: runtime.RawExtension{Raw: []byte(`"not a Pod"`)}}}
		raw, _ := json.Marshal(review)
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, strings.NewReader(string(raw))))
		var got admissionv1.AdmissionReview
		_ = json.Unmarshal(rec.Body.Bytes(), &got)
		switch mode {
		case "enforce":
			if rec.Code != http.StatusOK || got.Response == nil || got.Response.Allowed || got.Response.UID != "u1" ||
				!strings.Contains(got.Response.Result.Message, "cannot judge this request") {
				t.Errorf("enforce: %d %s; want a refusal that says why", rec.Code, rec.Body.String())
			}
		default:
			if rec.Code != http.StatusInternalServerError {
				t.Errorf("audit: %d, want 500 (the failurePolicy decides)", rec.Code)
			}
		}
	}
}

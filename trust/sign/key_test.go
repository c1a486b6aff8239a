package sign_test

import (
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"pinbot.dev/pinbot/trust/sign"
)

// TestLoadKey reads a key in the format cosign generate-key-pair writes,
// with its password; a wrong password, a key that cannot sign and a
// missing file are refused, naming the file.
func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	priv, pub, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), cryptoutils.StaticPasswordFunc([]byte("pw")))
	if err != nil {
		t.Fatal(err)
	}
	cosignKey := filepath.Join(dir, "cosign.key")
	if err := os.WriteFile(cosignKey, priv, 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := sign.LoadKey(cosignKey, []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := k.PublicPEM(); string(got) != string(pub) {
		t.Errorf("public key:\n%s\nwant\n%s", got, pub)
	}
	if _, err := k.Statement([]byte(`{}`)); err != nil {
		t.Errorf("signing a statement: %v", err)
	}

	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	smallPEM, _ := cryptoutils.MarshalPrivateKeyToPEM(small)
	smallKey := filepath.Join(dir, "small.pem")
	if err := os.WriteFile(smallKey, smallPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, password, want string
	}{
		{cosignKey, "wrong", "COSIGN_PASSWORD"},
		{smallKey, "", "RSA 2048, 3072 or 4096"},
		{filepath.Join(dir, "missing.key"), "", "missing.key"},
	} {
		_, err := sign.LoadKey(tc.path, []byte(tc.password))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), filepath.Base(tc.path)) {
			t.Errorf("LoadKey(%s, %q) = %v, want an error naming the file and %q", filepath.Base(tc.path), tc.password, err, tc.want)
		}
	}
}

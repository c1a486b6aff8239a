package serve

import (
	"fmt"
	"path/filepath"
	"strings"

	"pinbot.dev/pinbot/internal/opfile"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/trust/attest"
	signing "pinbot.dev/pinbot/trust/sign"
)

// Attest is serve's attest: section: the key it signs its "proven
// running" attestations with (package trust/attest).
//
//	attest:
//	  keyFile: /etc/pinbot/attest/cosign.key     # cosign generate-key-pair's, or a PEM key
//	  passwordFile: /etc/pinbot/attest/password  # its password, if it has one
//	  format: both                                # bundle, legacy or both
type Attest struct {
	// KeyFile is the private key, relative to the config file's directory.
	KeyFile string `yaml:"keyFile"`
	// PasswordFile holds the key's password (COSIGN_PASSWORD's), if any.
	PasswordFile string `yaml:"passwordFile"`
	// Format is where each attestation goes: "bundle" (a Sigstore bundle
	// referrer, as cosign attest v3 writes it), "legacy" (cosign's older
	// sha256-<hex>.att image, which Sigstore's policy-controller reads
	// for key-signed attestations) or "both" (the default).
	Format attest.Format `yaml:"format,omitempty"`
	// VerifierID is the verifier.id of the SLSA verification summary
	// written beside each soaked proof (default attest.DefaultVerifier).
	VerifierID string `yaml:"verifierID,omitempty"`
}

// resolve makes the section's files absolute, relative to dir (the
// config file's directory), as notify.Target.Resolve does its own.
func (a *Attest) resolve(dir string) {
	if a.Format == "" {
		a.Format = attest.FormatBoth
	}
	for _, p := range []*string{&a.KeyFile, &a.PasswordFile} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
}

// key loads the key, with its password if it has one.
func (a *Attest) key() (*signing.Key, error) {
	var password []byte
	if a.PasswordFile != "" {
		b, err := opfile.Read(a.PasswordFile, 4096)
		if err != nil {
			return nil, fmt.Errorf("attest.passwordFile: %w", err)
		}
		password = []byte(strings.TrimRight(string(b), "\r\n"))
		redact.Register(string(password))
	}
	k, err := signing.LoadKey(a.KeyFile, password)
	if err != nil {
		return nil, fmt.Errorf("attest.keyFile %s: %w", a.KeyFile, err)
	}
	return k, nil
}

// clusterOf names the cluster app's last pass ran on ("" for serve's
// own), false before its first.
func (d *daemon) clusterOf(app string) (string, bool) {
	st, _, err := d.r.Last(app)
	if err != nil || st == nil {
		return "", false
	}
	return st.Cluster, true
}

package output

import (
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/pins"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/trust"
)

// Error prints, under -o json, a failed command's error as one
// JSON object on stdout, {"error": "...", "file": "...", "line": N}, so
// that a CI step can parse it; file and line are those of an error that
// names them (a *pins.SyntaxError; a *pins.WriteError or *fs.PathError
// names a file only), "" and 0 otherwise; a refusal of the
// signature policy adds "refused". The message on
// stderr and the exit code stay as they are.
func Error(w io.Writer, err error) {
	out := struct {
		Error string `json:"error"`
		File  string `json:"file"`
		Line  int    `json:"line"`
		// Refused is the signature policy's refusal, when that is what
		// failed: the image, digest, rule and reason.
		Refused *trust.Refusal `json:"refused,omitempty"`
		// Gate is the release chain's refusal: the rule, environment,
		// image, digest and since when.
		Gate *release.Refusal `json:"gate,omitempty"`
	}{Error: redact.String(err.Error())}
	var se *pins.SyntaxError
	var we *pins.WriteError
	var pe *fs.PathError
	switch {
	case errors.As(err, &se):
		out.File, out.Line = se.File, se.Line
	case errors.As(err, &we):
		out.File = we.File
	case errors.As(err, &pe):
		out.File = pe.Path
	}
	var refusal *trust.Refusal
	if errors.As(err, &refusal) {
		out.Refused = refusal
	}
	var gated *release.Refusal
	if errors.As(err, &gated) {
		out.Gate = gated
	}
	_ = json.NewEncoder(w).Encode(out)
}

// Failed prints a failed command's error on stderr, and what to do
// about it when pinbot knows: a server whose certificate no CA this
// machine trusts has signed.
func Failed(w io.Writer, err error) {
	fmt.Fprintf(w, "pinbot: %s\n", err)
	var unknown x509.UnknownAuthorityError
	if errors.As(err, &unknown) || strings.Contains(err.Error(), "x509: certificate signed by unknown authority") {
		fmt.Fprintln(w, "pinbot: hint: a server's certificate is signed by a CA this machine does not trust: pass its PEM with --ca-file where the command has it, set SSL_CERT_FILE to it, or name it as caFile in pinbot's config (a command with only a context also trusts the CAs serve's Deployment mounts through SSL_CERT_DIR)")
	}
}

package flags

import (
	"bytes"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"pinbot.dev/pinbot/internal/opfile"
	"pinbot.dev/pinbot/trust"
	"pinbot.dev/pinbot/trust/policy"
)

// Policy is --signature-policy: the operator's signature policy for
// promote and drift, a floor the repository's own .pinbot.yaml adds to
// and never weakens. The repository's policy is read from the branch the
// promotion targets, which the credential CI promotes with may write;
// this one is not.
type Policy struct{ file string }

func (f *Policy) Bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.file, "signature-policy", "",
		"a file with a signatures: list (as .pinbot.yaml's; key paths relative to the file): checked besides the repository's own policy, which cannot weaken it")
}

// maxPolicyFile bounds --signature-policy.
const maxPolicyFile = 1 << 20

// Verifier is the compiled policy, nil without the flag.
func (f *Policy) Verifier() (*trust.Verifier, error) {
	if f.file == "" {
		return nil, nil
	}
	raw, err := opfile.Read(f.file, maxPolicyFile)
	if err != nil {
		return nil, Usagef("flag --signature-policy: %w", err)
	}
	var doc struct {
		Signatures policy.Rules `yaml:"signatures"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		return nil, Usagef("flag --signature-policy: %s: %w", f.file, err)
	}
	if len(doc.Signatures) == 0 {
		return nil, Usagef("flag --signature-policy: %s: no signatures: rules, which would check nothing", f.file)
	}
	v, err := trust.Compile(doc.Signatures, os.DirFS(filepath.Dir(f.file)))
	if err != nil {
		return nil, Usagef("flag --signature-policy: %s: %w", f.file, err)
	}
	return v, nil
}

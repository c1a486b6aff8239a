package policy

import (
	"strings"
	"testing"
	"time"

	"pinbot.dev/pinbot/trust/proven"
)

func TestFor(t *testing.T) {
	rules := Rules{
		{Images: []string{"r.example/acme/legacy"}, Keys: []string{"k.pub"}},
		{Images: []string{"r.example/acme/*"}, Keys: []string{"k.pub"}},
		{Images: []string{"r.example:5000/team/**"}, Keys: []string{"k.pub"}},
	}
	for _, tc := range []struct {
		image string
		want  int
	}{
		{"r.example/acme/legacy", 0},
		{"r.example/acme/app", 1},
		{"r.example/acme/app/sub", -1}, // "*" stays within a segment
		{"r.example:5000/team/a", 2},
		{"r.example:5000/team/a/b/c", 2}, // "/**" takes every repository below
		{"r.example:5000/team", 2},       // and the repository itself
		{"other.example/acme/app", -1},
	} {
		if got := rules.For(tc.image); got != tc.want {
			t.Errorf("For(%q) = %d, want %d", tc.image, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule Rule
		want string // "" for valid
	}{
		{"keys", Rule{Images: []string{"r.example/*"}, Keys: []string{"keys/k.pub"}}, ""},
		{"keyless", Rule{Images: []string{"r.example/*"}, TrustedRoot: "root.json", Keyless: []Identity{{Issuer: "https://i", SubjectRegExp: ".*@acme"}}}, ""},
		{"issuer and its pattern", Rule{Images: []string{"r.example/*"}, TrustedRoot: "root.json", Keyless: []Identity{{Issuer: "i", IssuerRegExp: "i", Subject: "s"}}}, "give issuer or issuerRegExp"},
		{"no subject", Rule{Images: []string{"r.example/*"}, TrustedRoot: "root.json", Keyless: []Identity{{Issuer: "i"}}}, "give subject or subjectRegExp"},
		{"bad image glob", Rule{Images: []string{"r.example/[x"}, Keys: []string{"k.pub"}}, "image glob"},
		{"digest in image", Rule{Images: []string{"r.example/a@sha256:00"}, Keys: []string{"k.pub"}}, "image glob"},
		{"absolute key", Rule{Images: []string{"r.example/*"}, Keys: []string{"/etc/k.pub"}}, "want a path relative"},
		{"attestation without type", Rule{Images: []string{"r.example/*"}, Keys: []string{"k.pub"}, Attestations: []Attestation{{Ref: "main"}}}, "needs a predicateType"},
		{"proven running", Rule{Images: []string{"r.example/*"}, Keys: []string{"k.pub"}, Attestations: []Attestation{{PredicateType: proven.PredicateType, Environment: "staging", MinSoak: time.Hour, Keys: []string{"attest.pub"}}}}, ""},
		{"proven running, vouched for by the image keys", Rule{Images: []string{"r.example/*"}, Keys: []string{"k.pub"}, Attestations: []Attestation{{PredicateType: proven.PredicateType, Environment: "staging"}}}, "attestations[0]: pinbot's proven-running attestation needs keys of its own"},
		{"proven running nowhere", Rule{Images: []string{"r.example/*"}, Keys: []string{"k.pub"}, Attestations: []Attestation{{PredicateType: proven.PredicateType}}}, "attestations[0]: pinbot's proven-running attestation needs the environment"},
		{"environment of provenance", Rule{Images: []string{"r.example/*"}, Keys: []string{"k.pub"}, Attestations: []Attestation{{PredicateType: "https://slsa.dev/provenance/v1", Environment: "staging"}}}, "not https://slsa.dev/provenance/v1"},
		{"negative soak", Rule{Images: []string{"r.example/*"}, Keys: []string{"k.pub"}, Attestations: []Attestation{{PredicateType: proven.PredicateType, Environment: "staging", MinSoak: -time.Hour, Keys: []string{"attest.pub"}}}}, "attestations[0].minSoak: minSoak must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			probs := Rules{tc.rule}.Validate()
			switch {
			case tc.want == "" && len(probs) > 0:
				t.Errorf("Validate = %v, want no problem", probs[0].Error())
			case tc.want != "" && (len(probs) == 0 || !strings.Contains(probs[0].Error(), tc.want)):
				t.Errorf("Validate = %v, want a problem with %q", probs, tc.want)
			}
		})
	}
}

func TestPatternMatchesWhole(t *testing.T) {
	re, err := Pattern(`refs/heads/main`)
	if err != nil {
		t.Fatal(err)
	}
	if re.MatchString("refs/heads/main-evil") || re.MatchString("x/refs/heads/main") || !re.MatchString("refs/heads/main") {
		t.Error("a pattern must match the whole value")
	}
}

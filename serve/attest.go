package serve

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pinbot.dev/pinbot/internal/buildinfo"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/opfile"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/trust/attest"
	"pinbot.dev/pinbot/trust/proven"
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

// attestQueue bounds the attestations waiting to be written: a registry
// that is down holds up no more than this many, the oldest dropped.
const attestQueue = 64

// attestTries bounds the writes of one attestation, with backoff from
// attestRetry.
const (
	attestTries = 5
	attestRetry = 2 * time.Second
)

// attester writes a signed "proven running" attestation each time the
// leader's release step says a digest was proven in an environment, and
// again when its soak completed. It never holds up the release: a write
// that fails is retried, then recorded in the ledger (an
// AttestationFailed decision: an Event, a notification, the release
// page) and counted.
type attester struct {
	rl  *releaser
	key *signing.Key
	// format is where each attestation goes (Attest.Format); verifier
	// the summaries' verifier.id.
	format   attest.Format
	verifier string
	jobs     chan proven.Predicate

	written *prometheus.CounterVec // pinbot_attestations_total{result}
}

func newAttester(rl *releaser, key *signing.Key, cfg Attest) *attester {
	a := &attester{rl: rl, key: key, format: cfg.Format, verifier: cfg.VerifierID, jobs: make(chan proven.Predicate, attestQueue),
		written: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pinbot_attestations_total",
			Help: "Proven running attestations, by result: written (signed and attached to the image), failed (after retries) or dropped (the queue was full).",
		}, []string{"result"})}
	for _, r := range []string{"written", "failed", "dropped"} {
		a.written.WithLabelValues(r)
	}
	return a
}

// observe queues the attestation that event e of repo's ledger l calls
// for: a proof, or a soak completed.
func (a *attester) observe(repo string, chain release.Chain, l *release.Ledger, e release.Event, now time.Time) {
	if a == nil || (e.Reason != release.ReasonProven && e.Reason != release.ReasonSoaked) {
		return
	}
	t := l.Lookup(e.Env, e.Image)
	if t == nil || t.Proven == "" || t.ProvenSince == nil || t.Bypassed() {
		return
	}
	env, _ := chain.Get(e.Env)
	p := proven.Predicate{Environment: e.Env, Repository: repo, Commit: t.Commit, Image: e.Image, Digest: t.Proven, Tag: t.PinnedTag,
		Stage: proven.StageProven, ProvenSince: *t.ProvenSince, ProvenFor: proven.Duration(max(e.At.Sub(*t.ProvenSince), 0)),
		Rules: proven.Rules, Pinbot: buildinfo.Current().Version, AttestedAt: now}
	if e.Reason == release.ReasonSoaked {
		p.Stage = proven.StageSoaked
	}
	if env != nil {
		p.Soak = proven.Duration(env.Soak)
		p.Apps = slices.Clone(env.Apps)
	}
	p.Group = release.GroupProven(l, chain, e.Env, e.Image)
	p.By = actsFor(l, e.Env, e.Image, t)
	clusters := map[string]string{}
	for _, app := range p.Apps {
		if st, _, err := a.rl.d.r.Last(app); err == nil && st != nil {
			clusters[app] = cmp.Or(st.Cluster, "in-cluster")
		}
	}
	for _, pod := range t.Pods {
		p.Pods = append(p.Pods, proven.Pod{Cluster: clusters[pod.App], Namespace: pod.Namespace, Name: pod.Pod, Container: pod.Container, Node: pod.Node, Running: pod.Running})
		if c := clusters[pod.App]; c != "" && !slices.Contains(p.Clusters, c) {
			p.Clusters = append(p.Clusters, c)
		}
		if id := pod.Running; id != "" && !slices.Contains(p.ImageIDs, id) {
			p.ImageIDs = append(p.ImageIDs, id)
		}
	}
	select {
	case a.jobs <- p:
	default:
		a.written.WithLabelValues("dropped").Inc()
	}
}

// run writes the queued attestations until ctx ends.
func (a *attester) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-a.jobs:
			a.write(ctx, p)
		}
	}
}

// write signs and attaches p, retrying; the outcome goes into the ledger.
func (a *attester) write(ctx context.Context, p proven.Predicate) {
	log := logctx.From(ctx).With("env", p.Environment, "image", p.Image, "digest", p.Digest, "stage", p.Stage)
	var err error
	for try, wait := 1, attestRetry; try <= attestTries; try, wait = try+1, 2*wait {
		opts := a.rl.d.promote.reg.PushOptions(ctx)
		w, werr := attest.Replace(ctx, a.rl.d.promote.reg, a.key, p, a.format, opts...)
		if werr == nil && p.Stage == proven.StageSoaked && w.Ref.DigestStr() != "" {
			_, werr = attest.WriteSummary(ctx, a.key, p, w.Ref, cmp.Or(a.verifier, attest.DefaultVerifier), opts...)
		}
		ref := w.Ref
		if err = werr; err == nil {
			a.written.WithLabelValues("written").Inc()
			if a.rl.attested != nil {
				a.rl.attested.Forget(p.Image, p.Digest)
			}
			log.Info("wrote the proven running attestation", "attestation", ref.String(), "format", string(a.format), "superseded", w.Superseded)
			a.record(ctx, p, release.ReasonAttested, fmt.Sprintf("attested %s proven running (%s, for %s) as %s", imageref.Short(p.Digest), p.Stage, time.Duration(p.ProvenFor).Round(time.Second), imageref.Short(ref.DigestStr())))
			return
		}
		if try == attestTries || ctx.Err() != nil {
			break
		}
		log.Warn("writing the proven running attestation failed; retrying", "in", wait, "error", redact.String(err.Error()))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
	a.written.WithLabelValues("failed").Inc()
	msg := redact.String(err.Error())
	log.Warn("writing the proven running attestation failed", "error", msg)
	a.record(ctx, p, release.ReasonAttestationFailed, fmt.Sprintf("could not attest %s proven running (%s): %s", imageref.Short(p.Digest), p.Stage, msg))
}

// record notes an attestation's outcome in the ledger, whose next step
// announces it (Event, notification, the release page).
func (a *attester) record(ctx context.Context, p proven.Predicate, reason, what string) {
	err := a.rl.ledgers.Update(ctx, p.Repository, func(l *release.Ledger) error {
		l.Log(time.Now(), p.Environment, p.Image, reason, what)
		return nil
	})
	if err != nil && ctx.Err() == nil {
		logctx.From(ctx).Warn("recording the attestation in the ledger", "error", redact.String(err.Error()))
	}
	a.rl.wake(p.Repository)
}

// actsFor are the people's actions (the ledger's audit) that brought t's
// proven digest of image into env: those that name the digest (a force,
// a merge from the page) and, for pinbot's rollback, the ask that opened
// it.
func actsFor(l *release.Ledger, env, image string, t *release.Track) []proven.Act {
	var out []proven.Act
	short := imageref.Short(t.Proven)
	var asked *release.Event
	for i, a := range l.Audit {
		if a.Env != env || a.Image != image {
			continue
		}
		switch {
		case a.Reason == release.ReasonRollbackAsked:
			if t.Merged == nil || !a.At.After(t.Merged.At) { // an ask after the merge is another rollback's
				asked = &l.Audit[i]
			}
		case strings.Contains(a.What, short):
			out = append(out, proven.Act{Who: a.By, At: a.At, What: a.What, Why: a.Why})
		}
	}
	if asked != nil && t.Merged != nil && t.Merged.Rollback && t.Merged.Digest == t.Proven {
		out = append(out, proven.Act{Who: asked.By, At: asked.At, What: asked.What, Why: asked.Why})
	}
	return out
}

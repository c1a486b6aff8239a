// Package attester writes serve's "proven running" attestations: when
// the leader's release step says a digest was proven in an environment,
// and again when its soak completed, it signs the predicate (package
// trust/proven) and attaches it to the image (package trust/attest),
// retrying, and records the outcome in the ledger.
package attester

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pinbot.dev/pinbot/internal/buildinfo"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/registry"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/serve/chains"
	"pinbot.dev/pinbot/trust/attest"
	"pinbot.dev/pinbot/trust/proven"
	signing "pinbot.dev/pinbot/trust/sign"
)

// attestQueue bounds the attestations waiting to be written: a registry
// that is down holds up no more than this many, the oldest dropped.
const attestQueue = 64

// attestTries bounds the writes of one attestation, with backoff from
// attestRetry.
const (
	attestTries = 5
	attestRetry = 2 * time.Second
)

// Attester writes a signed "proven running" attestation each time the
// leader's release step says a digest was proven in an environment, and
// again when its soak completed. It never holds up the release: a write
// that fails is retried, then recorded in the ledger (an
// AttestationFailed decision: an Event, a notification, the release
// page) and counted.
type Attester struct {
	rl  *chains.Runner
	reg *registry.Client
	// clusterOf names the cluster of app's last pass: "" for serve's own.
	clusterOf func(app string) (string, bool)
	key       *signing.Key
	// format is where each attestation goes (Attest.Format); verifier
	// the summaries' verifier.id.
	format   attest.Format
	verifier string
	jobs     chan proven.Predicate

	written *prometheus.CounterVec // pinbot_attestations_total{result}
}

// New returns the attester that signs with key into format (verifier
// names the summaries' verifier.id), writing through reg; clusterOf
// names the cluster each app's last pass ran on, false before its first.
func New(rl *chains.Runner, reg *registry.Client, clusterOf func(app string) (string, bool), key *signing.Key, format attest.Format, verifier string) *Attester {
	a := &Attester{rl: rl, reg: reg, clusterOf: clusterOf, key: key, format: format, verifier: verifier, jobs: make(chan proven.Predicate, attestQueue),
		written: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pinbot_attestations_total",
			Help: "Proven running attestations, by result: written (signed and attached to the image), failed (after retries) or dropped (the queue was full).",
		}, []string{"result"})}
	for _, r := range []string{"written", "failed", "dropped"} {
		a.written.WithLabelValues(r)
	}
	return a
}

// Observe queues the attestation that event e of repo's ledger l calls
// for: a proof, or a soak completed.
func (a *Attester) Observe(repo string, chain release.Chain, l *release.Ledger, e release.Event, now time.Time) {
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
		p.Wave = env.Wave
	}
	for _, c := range t.Clusters {
		if c.Since != nil {
			if p.ClusterProvenSince == nil {
				p.ClusterProvenSince = map[string]time.Time{}
			}
			p.ClusterProvenSince[c.Cluster] = *c.Since
		}
	}
	p.Group = release.GroupProven(l, chain, e.Env, e.Image)
	p.By = ActsFor(l, e.Env, e.Image, t)
	clusters := map[string]string{}
	for _, app := range p.Apps {
		if c, ok := a.clusterOf(app); ok {
			clusters[app] = cmp.Or(c, "in-cluster")
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

// Run writes the queued attestations until ctx ends.
func (a *Attester) Run(ctx context.Context) {
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
func (a *Attester) write(ctx context.Context, p proven.Predicate) {
	log := logctx.From(ctx).With("env", p.Environment, "image", p.Image, "digest", p.Digest, "stage", p.Stage)
	var err error
	for try, wait := 1, attestRetry; try <= attestTries; try, wait = try+1, 2*wait {
		opts := a.reg.PushOptions(ctx)
		w, werr := attest.Replace(ctx, a.reg, a.key, p, a.format, opts...)
		if werr == nil && p.Stage == proven.StageSoaked && w.Ref.DigestStr() != "" {
			_, werr = attest.WriteSummary(ctx, a.key, p, w.Ref, cmp.Or(a.verifier, attest.DefaultVerifier), opts...)
		}
		ref := w.Ref
		if err = werr; err == nil {
			a.written.WithLabelValues("written").Inc()
			a.rl.Forget(p.Image, p.Digest)
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
func (a *Attester) record(ctx context.Context, p proven.Predicate, reason, what string) {
	err := a.rl.Ledgers().Update(ctx, p.Repository, func(l *release.Ledger) error {
		l.Log(time.Now(), p.Environment, p.Image, reason, what)
		return nil
	})
	if err != nil && ctx.Err() == nil {
		logctx.From(ctx).Warn("recording the attestation in the ledger", "error", redact.String(err.Error()))
	}
	a.rl.Wake(p.Repository)
}

// ActsFor are the people's actions (the ledger's audit) that brought t's
// proven digest of image into env: those that name the digest (a force,
// a merge from the page) and, for pinbot's rollback, the ask that opened
// it.
func ActsFor(l *release.Ledger, env, image string, t *release.Track) []proven.Act {
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

// Collector is pinbot_attestations_total{result}.
func (a *Attester) Collector() prometheus.Collector { return a.written }

package chains

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/registry"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/release/assess"
	"pinbot.dev/pinbot/release/proofapi"
	"pinbot.dev/pinbot/release/store"
	"pinbot.dev/pinbot/serve/notify"
	"pinbot.dev/pinbot/trust"
)

// Deps are what a Runner takes of serve: its repositories, a promote.Env
// for each, the proofs of the apps, where Events and notifications go.
type Deps struct {
	// Kube and Namespace hold the ledgers (store.Ledgers).
	Kube      kubernetes.Interface
	Namespace string
	// Interval is how often each chain is stepped at the least;
	// DefaultInterval when zero.
	Interval time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Repos are the repositories whose .pinbot.yaml may declare a chain,
	// each once, as OWNER/NAME.
	Repos func() []string
	// Env is the promote.Env of a repository; nil: no forge, nothing runs.
	Env func(repo string) (promote.Env, error)
	// Report is the proof of an app, and Known says whether serve runs it.
	Report func(ctx context.Context, app string) assess.Report
	Known  func(app string) bool
	// Event writes a Kubernetes Event on an app's objects.
	Event func(app string, warning bool, reason, message string)
	// Notify is told of every decision; nil tells nobody.
	Notify *notify.Notifier
	// Policy is the config's signatures:, checked on each onward
	// promotion besides the repository's own; Refused is told of each
	// digest it refuses.
	Policy  *trust.Verifier
	Refused func(ctx context.Context, repo string, r *trust.Refusal)
	// Registry reads the upstream attestations; nil without a forge.
	Registry *registry.Client
}

// DefaultInterval is how often serve looks at each release chain:
// the proofs, the soaks, the gates and the merged digests.
const DefaultInterval = 15 * time.Second

// OnEvent makes f see each ledger event as it is announced: the attester
// signs the proofs that complete there. Call it before Run.
func (rl *Runner) OnEvent(f func(repo string, chain release.Chain, l *release.Ledger, e release.Event, now time.Time)) {
	rl.observe = f
}

// Ledgers are the ledgers the Runner steps.
func (rl *Runner) Ledgers() *store.Ledgers { return rl.ledgers }

// Now is the Runner's clock.
func (rl *Runner) Now() time.Time { return rl.now() }

// Forget drops what the Runner read of image@digest's attestations, once
// a new one is written.
func (rl *Runner) Forget(image, digest string) {
	if rl.attested != nil {
		rl.attested.Forget(image, digest)
	}
}

// Collectors are the Runner's metrics: its decisions, its holds and the
// chains' (chainmetrics).
func (rl *Runner) Collectors() []prometheus.Collector {
	return append([]prometheus.Collector{rl.decisions, rl.holds}, rl.chainm.Collectors()...)
}

// Answer answers the gate endpoint with a, the chain metrics' wrapper.
func (rl *Runner) Answer(a proofapi.Source) proofapi.Source { return rl.chainm.Answer(a) }

package kubeletsim

import (
	"net/http"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
)

// Option configures a Sim.
type Option func(*Sim)

// WithNodeName names the Node. Default "sim-node". Several Sims on one
// cluster need distinct names, and Pods steered with a nodeSelector (for
// example kubernetes.io/arch).
func WithNodeName(name string) Option {
	return func(s *Sim) { s.nodeName = name }
}

// WithPlatform sets the node's OS, architecture and variant (variant may be
// empty). It picks the child of a multi-arch index and fills
// status.nodeInfo and the kubernetes.io/os and kubernetes.io/arch labels.
// Default linux/amd64.
func WithPlatform(os, arch, variant string) Option {
	return func(s *Sim) { s.platform = v1.Platform{OS: os, Architecture: arch, Variant: variant} }
}

// WithNodeLabels adds labels to the Node, for nodeSelectors.
func WithNodeLabels(labels map[string]string) Option {
	return func(s *Sim) {
		if s.labels == nil {
			s.labels = map[string]string{}
		}
		for k, v := range labels {
			s.labels[k] = v
		}
	}
}

// WithImageIDForm sets how imageIDs are reported. Default RepoDigest.
// DockerPullable also makes the node report a docker:// container runtime.
func WithImageIDForm(f ImageIDForm) Option {
	return func(s *Sim) { s.imageIDForm.Store(int64(f)) }
}

// WithKeychain sets the registry credentials the node pulls with. Default
// authn.DefaultKeychain (the docker config, honouring DOCKER_CONFIG).
func WithKeychain(kc authn.Keychain) Option {
	return func(s *Sim) { s.keychain = kc }
}

// WithBasicAuth makes the node pull from registry (host[:port]) with a user
// name and password or token, and anonymously elsewhere.
func WithBasicAuth(registry, user, password string) Option {
	return func(s *Sim) {
		s.keychain = basicKeychain{registry: registry, auth: &authn.Basic{Username: user, Password: password}}
	}
}

// WithInsecureRegistries lets the node pull from hosts over plain HTTP.
// Loopback and private addresses always may.
func WithInsecureRegistries(hosts ...string) Option {
	return func(s *Sim) {
		for _, h := range hosts {
			s.insecure[h] = true
		}
	}
}

// WithTransport sets the HTTP transport for registry requests.
func WithTransport(t http.RoundTripper) Option {
	return func(s *Sim) { s.transport = t }
}

// WithRemoteOptions appends go-containerregistry remote options to every
// registry request; they override the keychain and transport options.
func WithRemoteOptions(opts ...remote.Option) Option {
	return func(s *Sim) { s.remoteOpts = append(s.remoteOpts, opts...) }
}

// WithPullTimeout bounds one image pull. Default 30s.
func WithPullTimeout(d time.Duration) Option {
	return func(s *Sim) { s.pullTimeout = d }
}

// WithPullBackoff caps the delay between retries of a failed pull (it
// starts at 200ms and doubles). Default 5s.
func WithPullBackoff(max time.Duration) Option {
	return func(s *Sim) { s.pullBackoff = max }
}

// WithRunDuration sets how long a run-to-completion container (a Job's)
// runs before it exits. Default 0: it completes as soon as it starts.
func WithRunDuration(d time.Duration) Option {
	return func(s *Sim) { s.runDuration = d }
}

// WithDeletionDelay sets how long a Pod being deleted keeps running before
// the node finalises its deletion. Default 0.
func WithDeletionDelay(d time.Duration) Option {
	return func(s *Sim) { s.deleteDelay = d }
}

// WithHeartbeat sets how often the node renews its Lease. Default 10s.
func WithHeartbeat(d time.Duration) Option {
	return func(s *Sim) { s.heartbeat = d }
}

// WithWorkers sets how many Pods are handled at once. Default 8.
func WithWorkers(n int) Option {
	return func(s *Sim) {
		if n > 0 {
			s.workers = n
		}
	}
}

// WithClientRate sets the API client rate limit. Default 500 QPS, burst
// 1000, enough for a 1,000-Pod rollout.
func WithClientRate(qps float32, burst int) Option {
	return func(s *Sim) { s.qps, s.burst = qps, burst }
}

// UsesImage matches Pods with a container or init container whose image
// contains s: a full reference, a repository or a digest.
func UsesImage(s string) PodMatcher {
	return func(p *corev1.Pod) bool {
		for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for _, c := range cs {
				if strings.Contains(c.Image, s) {
					return true
				}
			}
		}
		return false
	}
}

// basicKeychain answers one registry with fixed credentials.
type basicKeychain struct {
	registry string
	auth     authn.Authenticator
}

func (k basicKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	if r.RegistryStr() == k.registry {
		return k.auth, nil
	}
	return authn.Anonymous, nil
}

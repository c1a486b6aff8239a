package serve

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/internal/capool"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/podspec"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/release"
)

// Admission is serve's admission: section: a validating admission webhook
// that holds the cluster to the release chain (the Pod rule,
// release.AdmitPod). The API server calls it over HTTPS for the Pods and
// workloads a ValidatingWebhookConfiguration names (the chart's and
// deploy/components/admission's); serve judges those in the namespaces of
// its chains' environments.
//
//	admission:
//	  mode: audit                                  # audit (default): admit, but warn, Event and count; enforce: refuse
//	  listen: ":9443"
//	  certFile: /etc/pinbot/admission/tls.crt      # the serving certificate, reread when it changes
//	  keyFile: /etc/pinbot/admission/tls.key
//	  clientCAFile: /etc/pinbot/admission/client-ca.crt  # the API server's client certificate's CA
type Admission struct {
	// Mode is AdmissionAudit (the default) or AdmissionEnforce.
	Mode string `yaml:"mode"`
	// Listen is the HTTPS address the webhook is served on.
	Listen string `yaml:"listen"`
	// CertFile is the serving certificate (PEM), relative to the config
	// file's directory; reread when it changes.
	CertFile string `yaml:"certFile"`
	// KeyFile is the certificate's private key (PEM), relative to the
	// config file's directory.
	KeyFile string `yaml:"keyFile"`
	// ClientCAFile, when set, is the CA (PEM) of the client certificate
	// the API server presents to the webhook (the kubeconfig of its
	// AdmissionConfiguration): a caller without a certificate that CA
	// signed is refused in the TLS handshake, so nothing else that
	// reaches the port can send a review. Relative to the config file's
	// directory; read at start.
	ClientCAFile string `yaml:"clientCAFile"`
}

// Admission modes.
const (
	// AdmissionAudit admits what the chain would refuse, with a warning
	// to the client, a Warning Event and a count.
	AdmissionAudit = "audit"
	// AdmissionEnforce refuses it, saying why.
	AdmissionEnforce = "enforce"
)

// AdmissionPath is where the webhook is served.
const AdmissionPath = "/admission"

// maxReview bounds an AdmissionReview's body: the API server sends the
// object and, on an update, the old one (etcd stores at most 1.5 MiB).
const maxReview = 4 << 20

// maxReviewsInFlight bounds the reviews read and judged at once, and so
// the memory bodies take (maxReview each); a review over it waits for a
// place until the API server gives up on it.
const maxReviewsInFlight = 8

// problems lists what is wrong with the section.
func (a *Admission) problems() []string {
	var out []string
	switch a.Mode {
	case "", AdmissionAudit, AdmissionEnforce:
	default:
		out = append(out, fmt.Sprintf("admission.mode %q: want audit or enforce", a.Mode))
	}
	if a.Listen == "" {
		out = append(out, "admission.listen: required: the API server calls the webhook over HTTPS on it")
	}
	if a.CertFile == "" || a.KeyFile == "" {
		out = append(out, "admission.certFile and admission.keyFile: required: the API server calls only HTTPS webhooks")
	}
	return out
}

// resolve makes the section's files absolute, relative to dir.
func (a *Admission) resolve(dir string) {
	for _, p := range []*string{&a.CertFile, &a.KeyFile, &a.ClientCAFile} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
}

// enforce reports whether the webhook refuses.
func (a *Admission) enforce() bool { return a.Mode == AdmissionEnforce }

// admitter is the webhook: its section, its certificate and its count.
type admitter struct {
	d    *daemon
	cfg  Admission
	cert *certFiles
	// self is the user serve's own client is (its service account): its
	// syncs apply what Git pins, which the gate let in, and are admitted
	// without a look, even before the ledger shows the new pin (a forced
	// release a person merged, say). "" until whoami answered.
	self string

	// clients are the CAs of the callers' certificates
	// (Admission.ClientCAFile); nil asks for none.
	clients *x509.CertPool
	// slots holds a place per review in flight (maxReviewsInFlight).
	slots chan struct{}

	// decisions is pinbot_admission_reviews_total{env,result}.
	decisions *prometheus.CounterVec
}

func newAdmitter(d *daemon, cfg Admission) *admitter {
	return &admitter{d: d, cfg: cfg, cert: &certFiles{cert: cfg.CertFile, key: cfg.KeyFile}, slots: make(chan struct{}, maxReviewsInFlight),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pinbot_admission_reviews_total",
			Help: "Pods and workloads the admission webhook judged in an environment's namespaces, by environment and result: admitted, refused (enforce) or audited (audit mode: admitted, though the chain would refuse it).",
		}, []string{"env", "result"}),
	}
}

// start checks the certificate, learns who serve's own client is and
// serves the webhook on its listener until work ends.
func (a *admitter) start(ctx, work context.Context) error {
	log := logctx.From(ctx)
	if _, err := a.cert.get(nil); err != nil {
		return fmt.Errorf("%s: admission: %w", a.d.cfg.File(), err)
	}
	if err := a.loadClientCAs(); err != nil {
		return fmt.Errorf("%s: %w", a.d.cfg.File(), err)
	}
	if a.clients == nil {
		log.Warn("the admission webhook accepts reviews from anyone who reaches its port: set admission.clientCAFile to the CA of the API server's client certificate")
	}
	if err := a.whoami(ctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", a.cfg.Listen)
	if err != nil {
		return fmt.Errorf("%s: admission.listen: %w", a.d.cfg.File(), err)
	}
	log.Info("serving the admission webhook", "addr", ln.Addr().String(), "mode", cmp.Or(a.cfg.Mode, AdmissionAudit), "self", a.self)
	mux := http.NewServeMux()
	mux.Handle(AdmissionPath, a)
	go func() {
		if err := serveHTTP(work, tls.NewListener(ln, a.tlsConfig()), mux); err != nil {
			log.Warn("the admission webhook stopped", "error", err)
		}
	}()
	return nil
}

// loadClientCAs reads admission.clientCAFile, if set.
func (a *admitter) loadClientCAs() error {
	if a.cfg.ClientCAFile == "" {
		return nil
	}
	pool, err := capool.Load(a.cfg.ClientCAFile)
	if err != nil {
		return fmt.Errorf("admission.clientCAFile: %w", err)
	}
	a.clients = pool
	return nil
}

// whoami asks the API server who serve's own client is.
func (a *admitter) whoami(ctx context.Context) error {
	r, err := a.d.kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("asking the API server who pinbot is (SelfSubjectReview), to admit its own syncs: %w", err)
	}
	a.self = r.Status.UserInfo.Username
	return nil
}

// tlsConfig serves the certificate files, reread when they change (a
// cert-manager renewal).
func (a *admitter) tlsConfig() *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: a.cert.get}
	if a.clients != nil {
		c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, a.clients
	}
	return c
}

// ServeHTTP answers an AdmissionReview.
func (a *admitter) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	select {
	case a.slots <- struct{}{}:
		defer func() { <-a.slots }()
	case <-req.Context().Done():
		http.Error(w, "too many reviews in flight", http.StatusServiceUnavailable)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxReview+1))
	if err != nil || len(body) > maxReview {
		http.Error(w, "reading the AdmissionReview: too large or cut short", http.StatusRequestEntityTooLarge)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, "not an AdmissionReview with a request", http.StatusBadRequest)
		return
	}
	resp, err := a.review(req.Context(), review.Request)
	switch {
	case err != nil && a.cfg.enforce():
		// Enforce refuses what it cannot judge (a ledger it cannot read,
		// say), whatever the webhook's failurePolicy would do.
		logctx.From(req.Context()).Warn("admission review failed; refused", "namespace", review.Request.Namespace, "kind", review.Request.Kind.Kind, "error", redact.String(err.Error()))
		resp = &admissionv1.AdmissionResponse{UID: review.Request.UID, Result: &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusForbidden,
			Reason: metav1.StatusReasonForbidden, Message: "pinbot (enforce) cannot judge this request, and refuses it: " + redact.String(err.Error())}}
	case err != nil:
		// Audit: the API server applies the webhook's failurePolicy.
		logctx.From(req.Context()).Warn("admission review failed", "namespace", review.Request.Namespace, "kind", review.Request.Kind.Kind, "error", redact.String(err.Error()))
		http.Error(w, redact.String(err.Error()), http.StatusInternalServerError)
		return
	}
	review.Response, review.Request = resp, nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

// review judges the containers a request creates or changes in the
// namespace of an environment.
func (a *admitter) review(ctx context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, error) {
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return resp, nil
	}
	now, err := podspec.ContainersOf(req.Object.Raw)
	if err != nil {
		return nil, fmt.Errorf("reading the %s's containers: %w", req.Kind.Kind, err)
	}
	var before []podspec.Container
	if req.Operation == admissionv1.Update {
		before, _ = podspec.ContainersOf(req.OldObject.Raw)
	}
	changed := podspec.Changed(now, before)
	if len(changed) == 0 {
		return resp, nil
	}
	places, err := a.d.release.gated(ctx, a.d.r.Config(), req.Namespace)
	if err != nil {
		return nil, err
	}
	if a.self != "" && req.UserInfo.Username == a.self {
		for _, p := range places {
			a.decisions.WithLabelValues(p.env, "admitted").Inc()
		}
		return resp, nil // serve's own sync: what Git pins
	}
	what := fmt.Sprintf("%s %s/%s", req.Kind.Kind, req.Namespace, nameOf(req))
	dryRun := req.DryRun != nil && *req.DryRun // a dry run has no side effects
	var refused []string
	for _, p := range places {
		var here []string
		for _, c := range changed {
			if r := release.AdmitPod(p.ledger, p.chain, p.env, c.Name, c.Image); r != nil {
				here = append(here, r.Error())
			}
		}
		result := "admitted"
		switch {
		case len(here) > 0 && a.cfg.enforce():
			result = "refused"
		case len(here) > 0:
			result = "audited"
			for _, app := range p.apps {
				if dryRun {
					continue
				}
				a.d.r.Event(app, true, "AdmissionAudited", fmt.Sprintf("the admission webhook (audit mode) admitted %s, which the release chain of %s refuses in %s: %s", what, p.repo, p.env, strings.Join(here, "; ")))
			}
		}
		a.decisions.WithLabelValues(p.env, result).Inc()
		if len(here) > 0 {
			logctx.From(ctx).Info("admission review", "result", result, "object", what, "env", p.env, "why", strings.Join(here, "; "))
		}
		refused = append(refused, here...)
	}
	switch {
	case len(refused) == 0:
	case a.cfg.enforce():
		resp.Allowed = false
		resp.Result = &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
			Message: "pinbot: " + strings.Join(refused, "; ")}
	default:
		for _, r := range refused {
			resp.Warnings = append(resp.Warnings, "pinbot (audit): "+r)
		}
	}
	return resp, nil
}

// nameOf is the request's object's name, or its generateName.
func nameOf(req *admissionv1.AdmissionRequest) string {
	if req.Name != "" {
		return req.Name
	}
	var m struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	_ = json.Unmarshal(req.Object.Raw, &m)
	return m.Metadata.GenerateName + "…"
}

// gatedEnv is an environment of a chain whose apps run in a namespace,
// with its repository's ledger.
type gatedEnv struct {
	repo, env string
	chain     release.Chain
	ledger    *release.Ledger
	apps      []string
}

// gated are the environments whose apps (of serve's own cluster) run in
// namespace ns, each with its ledger as it is now. The chains are the
// ledgers' (which the leader writes), so every replica judges alike.
func (rl *releaser) gated(ctx context.Context, cfg *config.Config, ns string) ([]gatedEnv, error) {
	var out []gatedEnv
	for _, t := range rl.repos() {
		var l *release.Ledger
		read := func() error {
			var err error
			if l == nil {
				l, err = rl.ledgers.Read(ctx, t.Repo)
			}
			return err
		}
		chain, ok := rl.chain(t.Repo)
		if !ok {
			// A follower: the leader wrote the chain into the ledger.
			if err := read(); err != nil {
				return nil, err
			}
			chain = l.Chain
		}
		for _, e := range chain {
			var apps []string
			for _, name := range e.Apps {
				app, err := cfg.App(name)
				if err == nil && app.Cluster == nil && app.Namespace == ns {
					apps = append(apps, name)
				}
			}
			if len(apps) == 0 {
				continue
			}
			if err := read(); err != nil {
				return nil, err
			}
			out = append(out, gatedEnv{repo: t.Repo, env: e.Name, chain: chain, ledger: l, apps: apps})
		}
	}
	return out, nil
}

// certFiles is a certificate and key pair read from files, reread when
// either file's modification time changes.
type certFiles struct {
	cert, key string

	mu       sync.Mutex
	loaded   *tls.Certificate
	modified [2]time.Time
}

func (c *certFiles) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var mod [2]time.Time
	for i, f := range []string{c.cert, c.key} {
		fi, err := os.Stat(f)
		if err != nil {
			return nil, fmt.Errorf("the admission certificate: %w", err)
		}
		mod[i] = fi.ModTime()
	}
	if c.loaded != nil && mod == c.modified {
		return c.loaded, nil
	}
	pair, err := tls.LoadX509KeyPair(c.cert, c.key)
	if err != nil {
		return nil, fmt.Errorf("the admission certificate %s: %w", c.cert, err)
	}
	c.loaded, c.modified = &pair, mod
	return c.loaded, nil
}

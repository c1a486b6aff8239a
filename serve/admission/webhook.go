// Package admission is serve's validating admission webhook: it holds
// the cluster to the release chain (the Pod rule, release.AdmitPod) for
// the Pods and workloads the API server sends it, in the namespaces of
// the chains' environments. It reads its client's CA and serving
// certificate from files (reread on renewal), bounds the reviews in
// flight, admits serve's own syncs, and in enforce mode refuses what it
// cannot judge.
package admission

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"pinbot.dev/pinbot/internal/capool"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/podspec"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/serve/chains"
)

// Path is where the webhook is served.
const Path = "/admission"

// Options are the webhook's section (serve's admission:) and what it
// reads of serve.
type Options struct {
	// Enforce refuses what the chain refuses; else audit: admit, but
	// warn, Event and count.
	Enforce bool
	// Listen, CertFile, KeyFile and ClientCAFile are serve.Admission's.
	Listen, CertFile, KeyFile, ClientCAFile string
	// ConfigFile is serve's config file, which errors name.
	ConfigFile string
	// Kube asks who serve's own client is.
	Kube kubernetes.Interface
	// Gated are the environments whose apps (of serve's own cluster) run
	// in a namespace, with their ledgers (chains.Runner.Gated).
	Gated func(ctx context.Context, ns string) ([]chains.GatedEnv, error)
	// Event writes a Kubernetes Event on an app's objects.
	Event func(app string, warning bool, reason, message string)
}

// maxReview bounds an AdmissionReview's body: the API server sends the
// object and, on an update, the old one (etcd stores at most 1.5 MiB).
const maxReview = 4 << 20

// maxReviewsInFlight bounds the reviews read and judged at once, and so
// the memory bodies take (maxReview each); a review over it waits for a
// place until the API server gives up on it.
const maxReviewsInFlight = 8

// Webhook is the admission webhook: its options, its certificate and
// its count.
type Webhook struct {
	o    Options
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

// New returns the webhook o describes.
func New(o Options) *Webhook {
	return &Webhook{o: o, cert: &certFiles{cert: o.CertFile, key: o.KeyFile}, slots: make(chan struct{}, maxReviewsInFlight),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pinbot_admission_reviews_total",
			Help: "Pods and workloads the admission webhook judged in an environment's namespaces, by environment and result: admitted, refused (enforce) or audited (audit mode: admitted, though the chain would refuse it).",
		}, []string{"env", "result"}),
	}
}

// Listen checks the certificate, learns who serve's own client is and
// listens on o.Listen, with TLS, for the caller to serve Handler on.
func (a *Webhook) Listen(ctx context.Context) (net.Listener, error) {
	log := logctx.From(ctx)
	if _, err := a.cert.get(nil); err != nil {
		return nil, fmt.Errorf("%s: admission: %w", a.o.ConfigFile, err)
	}
	if err := a.loadClientCAs(); err != nil {
		return nil, fmt.Errorf("%s: %w", a.o.ConfigFile, err)
	}
	if a.clients == nil {
		log.Warn("the admission webhook accepts reviews from anyone who reaches its port: set admission.clientCAFile to the CA of the API server's client certificate")
	}
	if err := a.whoami(ctx); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", a.o.Listen)
	if err != nil {
		return nil, fmt.Errorf("%s: admission.listen: %w", a.o.ConfigFile, err)
	}
	mode := "audit"
	if a.o.Enforce {
		mode = "enforce"
	}
	log.Info("serving the admission webhook", "addr", ln.Addr().String(), "mode", mode, "self", a.self)
	return tls.NewListener(ln, a.tlsConfig()), nil
}

// Handler serves the webhook at Path.
func (a *Webhook) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(Path, a)
	return mux
}

// Collector is pinbot_admission_reviews_total{env,result}.
func (a *Webhook) Collector() prometheus.Collector { return a.decisions }

// loadClientCAs reads admission.clientCAFile, if set.
func (a *Webhook) loadClientCAs() error {
	if a.o.ClientCAFile == "" {
		return nil
	}
	pool, err := capool.Load(a.o.ClientCAFile)
	if err != nil {
		return fmt.Errorf("admission.clientCAFile: %w", err)
	}
	a.clients = pool
	return nil
}

// whoami asks the API server who serve's own client is.
func (a *Webhook) whoami(ctx context.Context) error {
	r, err := a.o.Kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("asking the API server who pinbot is (SelfSubjectReview), to admit its own syncs: %w", err)
	}
	a.self = r.Status.UserInfo.Username
	return nil
}

// tlsConfig serves the certificate files, reread when they change (a
// cert-manager renewal).
func (a *Webhook) tlsConfig() *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: a.cert.get}
	if a.clients != nil {
		c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, a.clients
	}
	return c
}

// ServeHTTP answers an AdmissionReview.
func (a *Webhook) ServeHTTP(w http.ResponseWriter, req *http.Request) {
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
	case err != nil && a.o.Enforce:
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
func (a *Webhook) review(ctx context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, error) {
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
	places, err := a.o.Gated(ctx, req.Namespace)
	if err != nil {
		return nil, err
	}
	if a.self != "" && req.UserInfo.Username == a.self {
		for _, p := range places {
			a.decisions.WithLabelValues(p.Env, "admitted").Inc()
		}
		return resp, nil // serve's own sync: what Git pins
	}
	what := fmt.Sprintf("%s %s/%s", req.Kind.Kind, req.Namespace, nameOf(req))
	dryRun := req.DryRun != nil && *req.DryRun // a dry run has no side effects
	var refused []string
	for _, p := range places {
		var here []string
		for _, c := range changed {
			if r := release.AdmitPod(p.Ledger, p.Chain, p.Env, c.Name, c.Image); r != nil {
				here = append(here, r.Error())
			}
		}
		result := "admitted"
		switch {
		case len(here) > 0 && a.o.Enforce:
			result = "refused"
		case len(here) > 0:
			result = "audited"
			for _, app := range p.Apps {
				if dryRun {
					continue
				}
				a.o.Event(app, true, "AdmissionAudited", fmt.Sprintf("the admission webhook (audit mode) admitted %s, which the release chain of %s refuses in %s: %s", what, p.Repo, p.Env, strings.Join(here, "; ")))
			}
		}
		a.decisions.WithLabelValues(p.Env, result).Inc()
		if len(here) > 0 {
			logctx.From(ctx).Info("admission review", "result", result, "object", what, "env", p.Env, "why", strings.Join(here, "; "))
		}
		refused = append(refused, here...)
	}
	switch {
	case len(refused) == 0:
	case a.o.Enforce:
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

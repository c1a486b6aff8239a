package serve

import (
	"context"
	"fmt"
	"path/filepath"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/serve/admission"
	"pinbot.dev/pinbot/serve/chains"
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

// newWebhook is the admission webhook of section a (package admission),
// judging the namespaces of d's own cluster's apps.
func newWebhook(d *daemon, a Admission) *admission.Webhook {
	return admission.New(admission.Options{
		Enforce: a.enforce(), Listen: a.Listen, CertFile: a.CertFile, KeyFile: a.KeyFile, ClientCAFile: a.ClientCAFile,
		ConfigFile: d.cfg.File(), Kube: d.kube, Event: d.r.Event,
		Gated: func(ctx context.Context, ns string) ([]chains.GatedEnv, error) {
			cfg := d.r.Config()
			return d.release.Gated(ctx, func(name string) bool {
				app, err := cfg.App(name)
				return err == nil && app.Cluster == nil && app.Namespace == ns // of serve's own cluster
			})
		},
	})
}

// serveAdmission serves the admission webhook, if any, until work ends.
func (d *daemon) serveAdmission(ctx, work context.Context) error {
	a := d.admission
	if a == nil {
		return nil
	}
	ln, err := a.Listen(ctx)
	if err != nil {
		return err
	}
	go func() {
		if err := serveHTTP(work, ln, a.Handler()); err != nil {
			logctx.From(ctx).Warn("the admission webhook stopped", "error", err)
		}
	}()
	return nil
}

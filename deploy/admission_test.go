package deploy

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/render"
	"pinbot.dev/pinbot/serve/admission"
)

// TestChartAdmission: admission.enabled renders the webhook: serve's
// config names the certificate the chart mounts, the Service routes 443
// to it, and the ValidatingWebhookConfiguration calls the Service with
// the CA that signed a certificate for the Service's name, exempting
// kube-system and the release's own namespace. Off, none of it renders;
// a mode of its own fails, naming the value.
func TestChartAdmission(t *testing.T) {
	off, err := chart(t, exampleValues)
	if err != nil {
		t.Fatal(err)
	}
	if has(off, "ValidatingWebhookConfiguration", "pinbot") || has(off, "Secret", "pinbot-admission-tls") {
		t.Error("the admission webhook renders while admission.enabled is false")
	}
	objs, err := chart(t, exampleValues, "../../deploy/testdata/admission-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := chartConfig(t, objs)
	if a := cfg.Admission; a == nil || a.Mode != "enforce" || a.Listen != ":9443" || a.CertFile != "/etc/pinbot/admission/tls.crt" ||
		a.ClientCAFile != "/etc/pinbot/admission-clients/ca.crt" {
		t.Errorf("admission section %+v, want enforce on :9443 with the mounted certificate and the API server's client CA", a)
	}
	var dep appsv1.Deployment
	find(t, objs, "Deployment", "pinbot", &dep)
	c := dep.Spec.Template.Spec.Containers[0]
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "admission" && p.ContainerPort == 9443 }) ||
		!slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
			return m.Name == "admission" && m.MountPath == "/etc/pinbot/admission"
		}) {
		t.Errorf("ports %v, mounts %v; want port admission and the certificate mounted", c.Ports, c.VolumeMounts)
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == "admission-clients" && m.MountPath == "/etc/pinbot/admission-clients"
	}) || !slices.ContainsFunc(dep.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
		return v.Name == "admission-clients" && v.Secret != nil && v.Secret.SecretName == "apiserver-webhook-client-ca"
	}) {
		t.Errorf("mounts %v; want the API server's client CA mounted from admission.clientCASecret", c.VolumeMounts)
	}
	var svc corev1.Service
	find(t, objs, "Service", "pinbot", &svc)
	if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == 443 && p.TargetPort.StrVal == "admission" }) {
		t.Errorf("Service ports %v, want 443 to admission", svc.Spec.Ports)
	}
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	find(t, objs, "ValidatingWebhookConfiguration", "pinbot", &vwc)
	w := vwc.Webhooks[0]
	if s := w.ClientConfig.Service; s == nil || s.Name != "pinbot" || s.Namespace != stateNamespace || *s.Path != admission.Path || *s.Port != 443 {
		t.Errorf("clientConfig %+v, want the Service's 443 at %s", w.ClientConfig, admission.Path)
	}
	if *w.FailurePolicy != admissionregistrationv1.Ignore || *w.SideEffects != admissionregistrationv1.SideEffectClassNoneOnDryRun {
		t.Errorf("failurePolicy %s, sideEffects %s; want Ignore and NoneOnDryRun", *w.FailurePolicy, *w.SideEffects)
	}
	if e := w.NamespaceSelector.MatchExpressions; len(e) != 1 || !slices.Contains(e[0].Values, "kube-system") || !slices.Contains(e[0].Values, stateNamespace) {
		t.Errorf("namespaceSelector %+v, want kube-system and %s exempt", w.NamespaceSelector, stateNamespace)
	}
	var secret corev1.Secret
	find(t, objs, "Secret", "pinbot-admission-tls", &secret)
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(w.ClientConfig.CABundle) {
		t.Fatalf("caBundle holds no certificate: %q", w.ClientConfig.CABundle)
	}
	block, _ := pem.Decode(secret.Data["tls.crt"])
	if block == nil {
		t.Fatal("tls.crt holds no certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: "pinbot." + stateNamespace + ".svc", Roots: roots}); err != nil {
		t.Errorf("the serving certificate does not verify for the Service against the caBundle: %s", err)
	}

	if _, err := chart(t, exampleValues, "../../deploy/testdata/admission-bad-values.yaml"); err == nil || !strings.Contains(err.Error(), "admission.mode: want audit or enforce") {
		t.Errorf("mode strict: %v, want the chart to refuse it", err)
	}
}

// TestAdmissionIsOneInstall: the chart with admission.enabled and
// deploy/base with components/admission run the same serve (Pod and
// Service) and ask the API server the same way: the webhooks differ only
// in where the caBundle comes from (the chart's, cert-manager's
// injector's) and the failure policy's and mode's defaults agree.
func TestAdmissionIsOneInstall(t *testing.T) {
	charted, err := render.FS(os.DirFS(".."), "charts/pinbot", render.WithHelm(render.Helm{
		ReleaseName: "pinbot", Namespace: stateNamespace,
		Values: map[string]any{"config": map[string]any{"existingConfigMap": "pinbot-config"}, "admission": map[string]any{"enabled": true}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	shipped := resources(t, buildWith(t, "overlays/admission", map[string]string{
		"overlays/admission/kustomization.yaml": "resources: [../../base]\ncomponents: [../../components/admission]\n",
	}))
	sameServe(t, shipped, charted, "deploy/base+admission")
	var baseHook, chartHook admissionregistrationv1.ValidatingWebhookConfiguration
	find(t, shipped, "ValidatingWebhookConfiguration", "pinbot", &baseHook)
	find(t, charted, "ValidatingWebhookConfiguration", "pinbot", &chartHook)
	if baseHook.Annotations["cert-manager.io/inject-ca-from"] != "pinbot-system/pinbot-admission" {
		t.Errorf("deploy's webhook annotations %v, want cert-manager's CA injection", baseHook.Annotations)
	}
	chartHook.Webhooks[0].ClientConfig.CABundle = nil
	if diff := cmp.Diff(baseHook.Webhooks, chartHook.Webhooks); diff != "" {
		t.Errorf("the webhooks (-deploy/base+admission +chart):\n%s", diff)
	}
	var cert struct {
		Spec struct {
			SecretName string   `json:"secretName"`
			DNSNames   []string `json:"dnsNames"`
		} `json:"spec"`
	}
	for _, o := range shipped {
		if o.GetKind() == "Certificate" {
			b, _ := o.MarshalJSON()
			_ = json.Unmarshal(b, &cert)
		}
	}
	if cert.Spec.SecretName != "pinbot-admission-tls" || !slices.Contains(cert.Spec.DNSNames, "pinbot.pinbot-system.svc") {
		t.Errorf("deploy's Certificate %+v, want the Secret the Deployment mounts, for the Service", cert.Spec)
	}
}

// TestOIDCIsOneInstall: the chart's dashboard.oidcSecret and deploy/base
// with components/oidc mount the sign-in's Secret alike, where
// docs/operations.md's dashboard.oidc reads it.
func TestOIDCIsOneInstall(t *testing.T) {
	charted, err := render.FS(os.DirFS(".."), "charts/pinbot", render.WithHelm(render.Helm{
		ReleaseName: "pinbot", Namespace: stateNamespace,
		Values: map[string]any{"config": map[string]any{"existingConfigMap": "pinbot-config"}, "dashboard": map[string]any{"oidcSecret": "pinbot-oidc"}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	shipped := resources(t, buildWith(t, "overlays/oidc", map[string]string{
		"overlays/oidc/kustomization.yaml": "resources: [../../base]\ncomponents: [../../components/oidc]\n",
	}))
	for name, objs := range map[string][]*unstructured.Unstructured{"the chart": charted, "deploy/base+oidc": shipped} {
		var d appsv1.Deployment
		find(t, objs, "Deployment", "pinbot", &d)
		mounted := ""
		for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
			if m.MountPath == "/etc/pinbot/oidc" {
				mounted = m.Name
			}
		}
		secret := ""
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name == mounted && v.Secret != nil {
				secret = v.Secret.SecretName
			}
		}
		if mounted == "" || secret != "pinbot-oidc" {
			t.Errorf("%s mounts %q at /etc/pinbot/oidc, from the Secret %q; want pinbot-oidc", name, mounted, secret)
		}
	}
}

package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"pinbot.dev/pinbot/internal/testenv/poll"
)

// TestReleaseAdmission: serve's admission webhook, called by the real
// kube-apiserver through a ValidatingWebhookConfiguration. In audit mode
// a Pod of a digest never proven upstream is admitted into prod with a
// warning, an Event and a count. In enforce mode, kubectl set image (an
// update of prod's Deployment) to that digest is refused with the
// chain's reason, and so is a tag; the digest staging proved, which
// pinbot's merged pull request then pins, goes through, and serve's own
// syncs are admitted all along, a person's forced release included.
func TestReleaseAdmission(t *testing.T) {
	ctx := context.Background()
	r := newReleaseRig(ctx, t, twoEnvs, 1)
	dir := t.TempDir()
	caPEM, certFile, keyFile := servingCert(t, dir)
	addr := freeAddr(t)
	base, err := os.ReadFile(r.cfg)
	if err != nil {
		t.Fatal(err)
	}
	withMode := func(mode string) {
		r.cfg = r.write("pinbot.yaml", string(base)+fmt.Sprintf("admission: {mode: %s, listen: %q, certFile: %s, keyFile: %s}\n", mode, addr, certFile, keyFile))
	}
	withMode("audit")
	audit := r.serveReleases("audit")
	r.waitProven("staging", r.v1, 2*time.Minute)
	r.waitProven("prod", r.v1, time.Minute)

	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	url := "https://" + addr + "/admission"
	_, err = r.peers.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "pinbot"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "images.pinbot.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
			Rules:                   admissionRules(),
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr(int32(10)),
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"staging", "prod"}},
			}},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kube, warnings := warningClient(t, r.peers.Cluster.Kubeconfig)
	_, never := r.image("app", "never-proven")

	// Audit: admitted, with a warning, an Event and a count.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "debug", Namespace: "prod"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: r.app + "@" + never}}}}
	poll.Until(t, time.Minute, "the webhook called in audit mode", func() (bool, string) {
		_, err := kube.CoreV1().Pods("prod").Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			return false, err.Error() // the webhook not serving yet: failurePolicy Fail
		}
		return true, ""
	})
	if w := warnings.all(); !strings.Contains(w, "pinbot (audit): container app: ") || !strings.Contains(w, "is refused in prod (not-proven)") {
		t.Errorf("audit mode: warnings %q, want the chain's refusal", w)
	}
	r.waitEvent(t, "web-prod", "AdmissionAudited", "Pod prod/debug")
	resp, err := http.Get("http://" + audit.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(m), `pinbot_admission_reviews_total{env="prod",result="audited"} 1`) {
		t.Errorf("metrics, want one audited review in prod:\n%s", m)
	}
	if err := kube.CoreV1().Pods("prod").Delete(ctx, "debug", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// Enforce.
	if err := audit.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-audit.done
	withMode("enforce")
	rep := r.serveReleases("enforce")
	setImage := func(image string) error {
		d, err := kube.AppsV1().Deployments("prod").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Spec.Template.Spec.Containers[0].Image = image
		_, err = kube.AppsV1().Deployments("prod").Update(ctx, d, metav1.UpdateOptions{})
		return err
	}
	poll.Until(t, time.Minute, "kubectl set image to an unproven digest refused", func() (bool, string) {
		err := setImage(r.app + "@" + never)
		return err != nil && strings.Contains(err.Error(), "pinbot: container app: ") &&
			strings.Contains(err.Error(), "is neither what prod pins ("), fmt.Sprint(err)
	})
	if err := setImage(r.app + ":latest"); err == nil || !strings.Contains(err.Error(), "it is not pinned by digest") {
		t.Errorf("kubectl set image to a tag: %v, want refused", err)
	}
	// kubectl debug: an ephemeral container of the unproven digest in a
	// running Pod of prod goes through pods/ephemeralcontainers.
	pods, err := kube.CoreV1().Pods("prod").List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("prod's Pods: %v, %d", err, len(pods.Items))
	}
	debugged := pods.Items[0]
	debugged.Spec.EphemeralContainers = append(debugged.Spec.EphemeralContainers, corev1.EphemeralContainer{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: r.app + "@" + never}})
	if _, err := kube.CoreV1().Pods("prod").UpdateEphemeralContainers(ctx, debugged.Name, &debugged, metav1.UpdateOptions{}); err == nil ||
		!strings.Contains(err.Error(), "pinbot: container debugger: ") {
		t.Errorf("kubectl debug with an unproven digest: %v, want refused", err)
	}

	// The chain's own way in: staging proves v2, pinbot's pull request
	// into prod merges, and serve's sync of prod is admitted.
	_, v2 := r.image("app", "v2")
	if code, out := r.pinbot("promote", "--image", r.app, "--digest", v2); code != 0 {
		t.Fatalf("promote v2: exit %d: %s", code, out)
	}
	r.merge(r.pull(r.branch("staging"), time.Minute).Index)
	r.waitProven("staging", v2, 2*time.Minute)
	prod := r.pull(r.branch("prod"), time.Minute)
	poll.Until(t, time.Minute, "prod's gate green", func() (bool, string) {
		pr := r.openPull(r.branch("prod"))
		if pr == nil {
			return false, "no pull request"
		}
		state, desc := r.gateStatus(pr.Head.Sha)
		return state == "success", state + ": " + desc
	})
	r.merge(prod.Index)
	r.waitProven("prod", v2, 2*time.Minute)

	// A person's forced release, merged: serve's own sync applies what
	// Git pins and is admitted at once, though the digest alice could not
	// set is proven nowhere.
	code, out := r.pinbot("promote", "--env", "prod", "--image", r.app, "--digest", never, "--force", "--reason", "hotfix",
		"--gate-url", "http://"+rep.addr, "--gate-token-file", r.gateFile)
	if code != 0 {
		t.Fatalf("forced promote into prod: exit %d: %s", code, out)
	}
	r.merge(r.pull(r.forcedBranch("prod"), time.Minute).Index)
	r.waitProven("prod", never, 2*time.Minute)
	if strings.Contains(rep.log.String(), "denied the request") {
		t.Errorf("serve's own sync was refused:\n%s", rep.log.String())
	}
}

// admissionRules are the Pods and workloads the webhook is asked about.
func admissionRules() []admissionregistrationv1.RuleWithOperations {
	ops := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	return []admissionregistrationv1.RuleWithOperations{
		{Operations: ops, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods", "pods/ephemeralcontainers"}}},
		{Operations: ops, Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments", "statefulsets", "daemonsets", "replicasets"}}},
	}
}

// servingCert writes a CA and a serving certificate for 127.0.0.1 into
// dir and returns the CA (PEM) and the certificate's and key's files.
func servingCert(t *testing.T, dir string) (caPEM []byte, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pinbot test CA"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "pinbot"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = dir+"/tls.crt", dir+"/tls.key"
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), certFile, keyFile
}

// warnings keeps the warnings the API server returned, as kubectl prints
// them.
type warnings struct {
	mu  sync.Mutex
	got []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, text)
}

func (w *warnings) all() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.got, "\n")
}

// warningClient is a client of kubeconfig's cluster, as a person with
// cluster access (alice, an admin: not pinbot's own user), that keeps the
// warnings it is sent.
func warningClient(t *testing.T, kubeconfig string) (kubernetes.Interface, *warnings) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	w := &warnings{}
	cfg.WarningHandler = w
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "alice", Groups: []string{"system:masters"}}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, w
}

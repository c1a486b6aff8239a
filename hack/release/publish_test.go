package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/internal/testenv/gitea/giteatest"
	"pinbot.dev/pinbot/internal/testenv/kube"
)

// TestReleaseToGitea is a release as a platform team makes and adopts it:
// `make release REGISTRY=… SIGNING_KEY=cosign.key CA_FILE=ca.pem` against
// Gitea's own container registry over TLS with a private CA, with a key
// the real cosign CLI generated; then the
// real cosign verifies every signature (the images, the chart, the
// provenance attestation, checksums.txt) with the public key, and refuses
// a changed checksums.txt; then the Helm SDK installs the chart from
// oci:// into a real control plane, and the Deployment runs the image by
// the digest the release pushed.
func TestReleaseToGitea(t *testing.T) {
	srv := giteatest.Start(t, gitea.Options{TLS: true})
	bin, err := gitea.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	cosign := filepath.Join(bin, "cosign")
	if _, err := os.Stat(cosign); err != nil {
		t.Fatalf("the release test verifies with the real cosign (make cosign): %s", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	docker, err := srv.DockerConfig()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	t.Setenv("DOCKER_CONFIG", docker)
	t.Setenv("HELM_CONFIG_HOME", filepath.Join(home, "helm"))
	t.Setenv("HELM_CACHE_HOME", filepath.Join(home, "helm-cache"))
	const password = "release-key-password"
	t.Setenv("COSIGN_PASSWORD", password)
	keys := t.TempDir()
	runCosign(t, keys, cosign, "generate-key-pair", "--output-key-prefix", filepath.Join(keys, "cosign"))

	registryPrefix := srv.RegistryHost + "/" + srv.AdminUser
	out := filepath.Join(t.TempDir(), "dist")
	var stdout, stderr bytes.Buffer
	err = run(ctx, []string{"--version", testVersion, "--out", out, "--dir", moduleDir, "--changelog", changelog(t, "2026-12-06"), "--registry", registryPrefix,
		"--key", filepath.Join(keys, "cosign.key"), "--ca-file", srv.CAFile, "--platforms", "linux/amd64",
		"--ldflags", "-X pinbot.dev/pinbot/internal/buildinfo.Version=" + testVersion},
		&stdout, &stderr, testEnv(map[string]string{"COSIGN_PASSWORD": password}))
	if err != nil {
		t.Fatalf("%s\n%s", err, stderr.String())
	}
	refs := strings.Fields(stdout.String())
	if len(refs) != 3 {
		t.Fatalf("stdout %q, want the two images' and the chart's digest references", stdout.String())
	}
	plain, debug := refs[0], refs[1]
	chartRef := strings.TrimPrefix(refs[2], "oci://")
	if _, err := name.NewDigest(chartRef); err != nil {
		t.Fatalf("the chart's reference %s: %s", refs[2], err)
	}

	// Every signature verifies with the real cosign and the public key;
	// the provenance is a signed SLSA attestation.
	pub := filepath.Join(keys, "cosign.pub")
	for _, ref := range []string{plain, debug, chartRef} {
		runCosign(t, keys, cosign, "verify", "--key", pub, "--insecure-ignore-tlog", "--registry-cacert", srv.CAFile, ref)
	}
	for _, ref := range []string{plain, debug} {
		runCosign(t, keys, cosign, "verify-attestation", "--key", pub, "--insecure-ignore-tlog", "--registry-cacert", srv.CAFile,
			"--type", "slsaprovenance1", ref)
	}
	if got, err := os.ReadFile(filepath.Join(out, "cosign.pub")); err != nil || !bytes.Equal(got, mustRead(t, pub)) {
		t.Errorf("the release's cosign.pub is not the signing key's public key (%v)", err)
	}
	sums := filepath.Join(out, "checksums.txt")
	bundle := filepath.Join(out, "checksums.txt.sigstore.json")
	runCosign(t, keys, cosign, "verify-blob", "--key", pub, "--bundle", bundle, "--insecure-ignore-tlog", sums)
	changed := filepath.Join(t.TempDir(), "checksums.txt")
	if err := os.WriteFile(changed, append(mustRead(t, sums), "0000  pinbot-evil\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if msg, err := cosignCmd(keys, cosign, "verify-blob", "--key", pub, "--bundle", bundle, "--insecure-ignore-tlog", changed).CombinedOutput(); err == nil {
		t.Errorf("cosign verify-blob accepted a changed checksums.txt:\n%s", msg)
	}

	// The chart from oci:// installs with the real helm (Helm v4, which
	// Argo CD's repo-server runs here too) and runs the pushed image by
	// digest.
	cluster, err := kube.Start(ctx, kube.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cluster.Stop() })
	const ns = "pinbot-system"
	admin := kubernetes.NewForConfigOrDie(cluster.Config())
	for _, app := range []string{"guestbook", "podinfo"} { // the example's appNamespaces
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: app}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	values := filepath.Join(t.TempDir(), "values.yaml")
	example := mustRead(t, filepath.Join(moduleDir, "charts", "pinbot", "ci", "verify-only-values.yaml"))
	// The example pins an image of its own; the released chart pins the
	// one it was released with.
	example = regexp.MustCompile(`(?m)^image:\n(  .*\n)*`).ReplaceAll(example, nil)
	if err := os.WriteFile(values, example, 0o644); err != nil {
		t.Fatal(err)
	}
	helm := exec.CommandContext(ctx, filepath.Join(bin, "argocd-path", "helm"), "install", "pinbot",
		"oci://"+registryPrefix+"/charts/pinbot", "--version", strings.TrimPrefix(testVersion, "v"),
		"--ca-file", srv.CAFile, "-n", ns, "--create-namespace", "-f", values, "--kubeconfig", cluster.Kubeconfig)
	helm.Env = append(os.Environ(), "HOME="+home)
	if msg, err := helm.CombinedOutput(); err != nil {
		t.Fatalf("helm install oci://%s: %s\n%s", chartRef, err, msg)
	}
	dep, err := admin.AppsV1().Deployments(ns).Get(ctx, "pinbot", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := name.NewDigest(plain)
	got := dep.Spec.Template.Spec.Containers[0].Image
	if got != want.Context().Name()+":"+testVersion+"@"+want.DigestStr() {
		t.Errorf("the installed Deployment runs %s, want the pushed %s (tag %s)", got, plain, testVersion)
	}
}

func cosignCmd(home, cosign string, args ...string) *exec.Cmd {
	cmd := exec.Command(cosign, args...)
	cmd.Env = append(os.Environ(), "HOME="+home, "SIGSTORE_NO_CACHE=true", "TUF_ROOT="+filepath.Join(home, "tuf"))
	return cmd
}

// runCosign runs the real cosign and fails the test on its failure.
func runCosign(t *testing.T, home, cosign string, args ...string) {
	t.Helper()
	if out, err := cosignCmd(home, cosign, args...).CombinedOutput(); err != nil {
		t.Fatalf("cosign %s: %s\n%s", strings.Join(args, " "), err, out)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

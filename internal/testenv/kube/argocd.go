package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

// ArgoCDNamespace is where StartArgoCD's controller looks for its
// Applications, settings and cluster Secrets, as Argo CD's install does.
const ArgoCDNamespace = "argocd"

// ArgoCD is the real Argo CD application-controller, repo-server, API
// server and applicationset-controller (with progressive syncs, so an
// ApplicationSet may roll out with RollingSync) (`make argocd`, one
// multi-call binary) and the redis they share, running
// against a Cluster, out of cluster, as the cluster's admin. Stop it when
// done.
type ArgoCD struct {
	// Logs are the components' log files, under the cluster's Dir.
	Logs struct{ Controller, RepoServer, APIServer, AppSets, Redis string }
	// URL is the API server's, http://127.0.0.1:<port> (no TLS).
	URL string

	procGroup
}

// ArgoCDReader is the Argo CD account with an API key and read-only
// access that StartArgoCD creates, for AccountToken.
const ArgoCDReader = "pinbot"

// argoSettings are the objects an Argo CD install creates besides its
// CRDs, which its components read: its settings (with a read-only API
// account), its RBAC settings, its server Secret (with the admin's
// password hash, %s), and the default AppProject, open to every
// repository and destination.
const argoSettings = `apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cm, namespace: argocd, labels: {app.kubernetes.io/part-of: argocd}}
data: {timeout.reconciliation: 180s, accounts.pinbot: apiKey}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-rbac-cm, namespace: argocd, labels: {app.kubernetes.io/part-of: argocd}}
data: {policy.csv: "g, pinbot, role:readonly"}
---
apiVersion: v1
kind: Secret
metadata: {name: argocd-secret, namespace: argocd, labels: {app.kubernetes.io/part-of: argocd}}
stringData: {server.secretkey: pinbot-test-not-a-secret, admin.password: %q, admin.passwordMtime: %q}
---
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: default, namespace: argocd}
spec:
  sourceRepos: ['*']
  destinations: [{namespace: '*', server: '*'}]
  clusterResourceWhitelist: [{group: '*', kind: '*'}]
`

// StartArgoCD installs Argo CD's CRDs, namespace and settings, and runs
// redis (the system's redis-server), the repo-server and the
// application-controller, every address on loopback except the
// controller's metrics port (it has no address flag; a free port), until
// each answers. The controller's in-cluster destination,
// https://kubernetes.default.svc, is this cluster (ARGOCD_FAKE_IN_CLUSTER).
// It resyncs apps every resync (Argo CD's default is 3 minutes).
func (c *Cluster) StartArgoCD(ctx context.Context, resync time.Duration) (*ArgoCD, error) {
	bin, err := findBinDir("")
	if err != nil {
		return nil, err
	}
	argocd := filepath.Join(bin, "argocd")
	if _, err := os.Stat(argocd); err != nil {
		return nil, fmt.Errorf("finding argocd in %s: %w (run `make argocd` to build Argo CD)", bin, err)
	}
	redis, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("Argo CD needs redis: %w (install Debian's redis-server; make test-deps does)", err)
	}
	if err := c.InstallNamedCRDs(ctx, ApplicationCRD, AppProjectCRD, ApplicationSetCRD); err != nil {
		return nil, err
	}
	if err := c.ensureNamespace(ctx, ArgoCDNamespace); err != nil {
		return nil, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(argoAdminPassword), bcrypt.MinCost)
	if err != nil {
		return nil, err
	}
	if err := c.createAll(ctx, fmt.Sprintf(argoSettings, hash, time.Now().UTC().Format(time.RFC3339))); err != nil {
		return nil, err
	}
	// The controller takes its namespace from the kubeconfig's context.
	kubeconfig := filepath.Join(c.Dir, "argocd.kubeconfig")
	kc, err := clientcmd.LoadFromFile(c.Kubeconfig)
	if err != nil {
		return nil, err
	}
	kc.Contexts[kc.CurrentContext].Namespace = ArgoCDNamespace
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		return nil, err
	}

	ports, err := freePorts(10)
	if err != nil {
		return nil, err
	}
	port := func(i int) string { return strconv.Itoa(ports[i]) }
	home := filepath.Join(c.Dir, "argocd-home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	a := &ArgoCD{}
	a.Logs.Redis = filepath.Join(c.Dir, "redis.log")
	a.Logs.RepoServer = filepath.Join(c.Dir, "argocd-repo-server.log")
	a.Logs.Controller = filepath.Join(c.Dir, "argocd-application-controller.log")
	a.Logs.APIServer = filepath.Join(c.Dir, "argocd-server.log")
	a.Logs.AppSets = filepath.Join(c.Dir, "argocd-applicationset-controller.log")

	rp, err := startProcess("redis", redis, a.Logs.Redis, []string{
		"--port", port(0), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", home,
	})
	if err != nil {
		return nil, err
	}
	a.procs = append(a.procs, rp)
	// The repo-server runs Argo CD's git-verify-wrapper.sh on every
	// checkout; make argocd puts it in bin/argocd-path.
	env := []string{
		"PATH=" + filepath.Join(bin, "argocd-path") + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + home, "KUBECONFIG=" + kubeconfig, "ARGOCD_FAKE_IN_CLUSTER=true", "ARGOCD_GPG_ENABLED=false",
		"ARGOCD_TLS_DATA_PATH=" + home, "ARGOCD_SSH_DATA_PATH=" + home, "ARGOCD_GNUPGHOME=" + home,
	}
	repo, err := startProcessEnv("argocd-repo-server", argocd, a.Logs.RepoServer, append(env, "ARGOCD_BINARY_NAME=argocd-repo-server"), []string{
		"--address=127.0.0.1", "--port=" + port(1), "--disable-tls", "--client-ca-path=",
		"--metrics-address=127.0.0.1", "--metrics-port=" + port(2),
		"--redis=127.0.0.1:" + port(0), "--loglevel=debug",
	})
	if err != nil {
		return nil, errors.Join(err, a.Stop())
	}
	a.procs = append(a.procs, repo)
	ctrl, err := startProcessEnv("argocd-application-controller", argocd, a.Logs.Controller, append(env, "ARGOCD_BINARY_NAME=argocd-application-controller"), []string{
		"--kubeconfig=" + kubeconfig, "--namespace=" + ArgoCDNamespace,
		"--redis=127.0.0.1:" + port(0),
		"--repo-server=127.0.0.1:" + port(1), "--repo-server-plaintext",
		"--commit-server=127.0.0.1:" + port(4),
		"--metrics-port=" + port(3),
		"--app-resync=" + strconv.Itoa(int(resync.Seconds())), "--app-resync-jitter=0",
		"--loglevel=debug",
	})
	if err != nil {
		return nil, errors.Join(err, a.Stop())
	}
	a.procs = append(a.procs, ctrl)
	api, err := startProcessEnv("argocd-server", argocd, a.Logs.APIServer, append(env, "ARGOCD_BINARY_NAME=argocd-server"), []string{
		"--kubeconfig=" + kubeconfig, "--namespace=" + ArgoCDNamespace,
		"--insecure", "--address=127.0.0.1", "--port=" + port(5),
		"--metrics-address=127.0.0.1", "--metrics-port=" + port(6),
		"--redis=127.0.0.1:" + port(0),
		"--repo-server=127.0.0.1:" + port(1), "--repo-server-plaintext",
		"--dex-server=", "--staticassets=" + home,
		"--loglevel=debug",
	})
	if err != nil {
		return nil, errors.Join(err, a.Stop())
	}
	a.procs = append(a.procs, api)
	a.URL = "http://127.0.0.1:" + port(5)
	sets, err := startProcessEnv("argocd-applicationset-controller", argocd, a.Logs.AppSets, append(env, "ARGOCD_BINARY_NAME=argocd-applicationset-controller"), []string{
		"--kubeconfig=" + kubeconfig, "--namespace=" + ArgoCDNamespace,
		"--metrics-addr=127.0.0.1:" + port(7), "--probe-addr=127.0.0.1:" + port(8), "--webhook-addr=127.0.0.1:" + port(9),
		"--argocd-repo-server=127.0.0.1:" + port(1), "--repo-server-plaintext",
		"--enable-progressive-syncs", "--enable-scm-providers=false", "--loglevel=debug",
	})
	if err != nil {
		return nil, errors.Join(err, a.Stop())
	}
	a.procs = append(a.procs, sets)

	hc := &http.Client{Timeout: 5 * time.Second}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for _, probe := range []string{"127.0.0.1:" + port(2) + "/metrics", "127.0.0.1:" + port(3) + "/metrics", "127.0.0.1:" + port(5) + "/healthz", "127.0.0.1:" + port(7) + "/metrics"} {
		if err := waitHTTP(ctx, hc, "http://"+probe, "", a.procs...); err != nil {
			return nil, errors.Join(err, a.Stop())
		}
	}
	return a, nil
}

// argoAdminPassword is the admin's password of the test Argo CD, which
// only AccountToken uses.
const argoAdminPassword = "pinbot-test-admin"

// AccountToken logs in to the API server as the admin, as `argocd login`
// does, and generates an API token of account (ArgoCDReader), as `argocd
// account generate-token` does.
func (a *ArgoCD) AccountToken(ctx context.Context, account string) (string, error) {
	var session struct{ Token string }
	if err := a.call(ctx, "/api/v1/session", "", map[string]string{"username": "admin", "password": argoAdminPassword}, &session); err != nil {
		return "", fmt.Errorf("logging in to Argo CD as admin: %w", err)
	}
	var tok struct{ Token string }
	if err := a.call(ctx, "/api/v1/account/"+account+"/token", session.Token, map[string]string{"name": account}, &tok); err != nil {
		return "", fmt.Errorf("generating a token of Argo CD account %s: %w", account, err)
	}
	return tok.Token, nil
}

// call POSTs in as JSON to the API server's path and decodes the answer
// into out.
func (a *ArgoCD) call(ctx context.Context, path, token string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.URL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s: %s", path, resp.Status, raw)
	}
	return json.Unmarshal(raw, out)
}

// createAll creates each object of the YAML stream y.
func (c *Cluster) createAll(ctx context.Context, y string) error {
	dyn, err := dynamic.NewForConfig(c.Config())
	if err != nil {
		return err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(y), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("reading Argo CD's settings: %w", err)
		}
		gvk := u.GroupVersionKind()
		res := schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: resourceOf(gvk.Kind)}
		if _, err := dyn.Resource(res).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating %s %s/%s: %w", gvk.Kind, u.GetNamespace(), u.GetName(), err)
		}
	}
}

// resourceOf is the resource of the few kinds createAll is given.
func resourceOf(kind string) string {
	switch kind {
	case "ConfigMap":
		return "configmaps"
	case "Secret":
		return "secrets"
	case "AppProject":
		return "appprojects"
	}
	return ""
}

package reconciler_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsyaml "sigs.k8s.io/yaml"

	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/reconciler/chartrepo"
	"pinbot.dev/pinbot/reconciler/chartrepo/chartrepotest"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// chartArchive packs chart name at version, its values pinning img, as
// helm package does.
func chartArchive(t *testing.T, chart, version string, img image) []byte {
	t.Helper()
	files := map[string]string{
		chart + "/Chart.yaml":          fmt.Sprintf("apiVersion: v2\nname: %s\nversion: %s\n", chart, version),
		chart + "/values.yaml":         fmt.Sprintf("replicaCount: 1\nimage: {repository: %s, digest: %q}\n", img.repo, img.digest),
		chart + "/templates/web.yaml":  helmDeployment,
		chart + "/templates/NOTES.txt": "deployed {{ .Release.Name }}\n",
	}
	return chartrepotest.Pack(t, files)
}

// uploadHelmChart publishes a chart archive to Gitea's Helm package
// registry of the test's organisation, and returns the repository URL
// Argo CD would name.
func uploadHelmChart(t *testing.T, archive []byte) string {
	t.Helper()
	return uploadHelmChartTo(t, org, archive)
}

// uploadHelmChartTo is uploadHelmChart to owner's registry.
func uploadHelmChartTo(t *testing.T, owner string, archive []byte) string {
	t.Helper()
	base := strings.TrimSuffix(env.gitea.URL, "/") + "/api/packages/" + owner + "/helm"
	req, err := http.NewRequestWithContext(testCtx, http.MethodPost, base+"/api/charts", bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(env.gitea.AdminUser, env.gitea.Token)
	resp, err := env.gitea.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("uploading the chart to Gitea's Helm registry: %s", resp.Status)
	}
	return base
}

// pushOCIChart pushes a chart archive to Gitea's container registry as
// Helm does (helm push): a manifest whose one layer is the archive. It
// returns the registry path Argo CD would name as repoURL.
func pushOCIChart(t *testing.T, chart, version string, archive []byte) string {
	t.Helper()
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: static.NewLayer(archive, types.MediaType(chartrepo.ChartLayer))})
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, "application/vnd.cncf.helm.config.v1+json")
	repoPath := env.gitea.RegistryHost + "/" + org
	ref, err := name.ParseReference(repoPath + "/" + chart + ":" + version)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, env.auth()); err != nil {
		t.Fatalf("pushing %s: %s", ref, err)
	}
	return repoPath
}

// TestArgoCDHelmRepositoryChart: Applications whose source is a chart of
// a Helm repository, served by Gitea's real package registries. From the
// HTTP repository with a version range, pinbot renders the newest version
// in it (0.2.0, pinning v2): Pods running v2 are Verified against that
// version, and Pods running 0.1.0's v1 are a Mismatch. The same chart
// from the OCI registry is Verified too.
func TestArgoCDHelmRepositoryChart(t *testing.T) {
	s := newDeployerScenario(t, "vo-chart", "argocd")
	v1, v2 := pushImage(t, "vo-chart-app", "v1"), pushImage(t, "vo-chart-app", "v2")
	uploadHelmChart(t, chartArchive(t, "vo-chart-web", "0.1.0", v1))
	repoURL := uploadHelmChart(t, chartArchive(t, "vo-chart-web", "0.2.0", v2))
	s.create(applicationsRes, "argocd", fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s, namespace: argocd}
spec:
  project: default
  source: {repoURL: %q, chart: vo-chart-web, targetRevision: "0.*", helm: {releaseName: %s}}
  destination: {server: "https://kubernetes.default.svc", namespace: %s}
`, s.name, repoURL, s.name, s.name))
	s.apply(namedDeployment(s.name, 1, v2.repo+"@"+v2.digest))
	s.argoSynced("0.2.0", s.name)

	st, v := s.waitStatus(rollout, "verified against chart 0.2.0", func(_ *status.App, v *verdict.Verification) bool {
		return v != nil && v.Verified
	})
	if st.Commit != "0.2.0" || st.DeployedCommit != "0.2.0" || st.Repo != repoURL || st.Path != "vo-chart-web" {
		t.Errorf("status: head %q, deployed %q, repo %q, path %q; want chart vo-chart-web 0.2.0 of %s", st.Commit, st.DeployedCommit, st.Repo, st.Path, repoURL)
	}
	for _, c := range v.Containers {
		if c.GitDigest != v2.digest {
			t.Errorf("container %+v: pinned digest %s, want chart 0.2.0's %s", c, c.GitDigest, v2.digest)
		}
	}

	s.apply(namedDeployment(s.name, 1, v1.repo+"@"+v1.digest)) // 0.1.0's image, not the version Argo CD deployed
	s.waitStatus(rollout, "a Mismatch for the older chart's image", func(_ *status.App, v *verdict.Verification) bool {
		return v != nil && !v.Verified && hasVerdict(v, verdict.Mismatch)
	})

	// The same chart, from Gitea's OCI registry.
	ociRepo := pushOCIChart(t, "vo-chart-oci", "0.2.0", chartArchive(t, "vo-chart-oci", "0.2.0", v2))
	s.mergePatch(applicationsRes, "argocd", fmt.Sprintf(`{spec: {source: {repoURL: %q, chart: vo-chart-oci, targetRevision: 0.2.0}}}`, ociRepo))
	s.apply(namedDeployment(s.name, 1, v2.repo+"@"+v2.digest))
	st, _ = s.waitStatus(rollout, "verified against the OCI chart", func(st *status.App, v *verdict.Verification) bool {
		return v != nil && v.Verified && st.Repo == ociRepo
	})
	if st.Path != "vo-chart-oci" || st.Commit != "0.2.0" {
		t.Errorf("status: path %q, head %q; want vo-chart-oci 0.2.0", st.Path, st.Commit)
	}
}

var (
	helmReleasesRes     = schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}
	helmRepositoriesRes = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "helmrepositories"}
)

// helmReleased writes the status of the HelmRelease having installed
// chartVersion, through the status subresource as helm-controller does.
func (s *deployerScenario) helmReleased(chart, chartVersion string) {
	s.t.Helper()
	ri := s.dyn.Resource(helmReleasesRes).Namespace("flux-system")
	u, err := ri.Get(testCtx, s.name, metav1.GetOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	st := map[string]any{}
	if err := sigsyaml.Unmarshal([]byte(fmt.Sprintf(`
observedGeneration: %d
history:
- {name: %s, namespace: %s, version: 1, status: deployed, chartName: %s, chartVersion: %s, configDigest: "sha256:00", digest: "sha256:00", firstDeployed: %q, lastDeployed: %q}
conditions:
- {type: Ready, status: "True", reason: InstallSucceeded, message: "Helm install succeeded", lastTransitionTime: %q, observedGeneration: %d}
`, u.GetGeneration(), s.name, s.name, chart, chartVersion, now, now, now, u.GetGeneration())), &st); err != nil {
		s.t.Fatal(err)
	}
	u.Object["status"] = st
	if _, err := ri.UpdateStatus(testCtx, u, metav1.UpdateOptions{}); err != nil {
		s.t.Fatalf("updating the HelmRelease's status: %s", err)
	}
}

// TestFluxHelmRelease: a Flux HelmRelease of a chart from a HelmRepository
// (Gitea's Helm registry), whose valuesFrom ConfigMap pins v2 over the
// chart's v1. Pods running v2 are Verified against the installed chart
// version with those values; Pods running the chart's default are a
// Mismatch.
func TestFluxHelmRelease(t *testing.T) {
	s := newDeployerScenario(t, "vo-hr", "flux-helm")
	v1, v2 := pushImage(t, "vo-hr-app", "v1"), pushImage(t, "vo-hr-app", "v2")
	repoURL := uploadHelmChart(t, chartArchive(t, "vo-hr-web", "0.1.0", v1))
	s.create(helmRepositoriesRes, "flux-system", fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: %s, namespace: flux-system}
spec: {interval: 10m, url: %q}
`, s.name, repoURL))
	if _, err := env.kube.CoreV1().ConfigMaps("flux-system").Create(testCtx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: s.name + "-values"},
		Data:       map[string]string{"values.yaml": fmt.Sprintf("image: {digest: %q}\n", v2.digest)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.create(helmReleasesRes, "flux-system", fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: %[1]s, namespace: flux-system}
spec:
  interval: 10m
  releaseName: %[1]s
  targetNamespace: %[1]s
  chart:
    spec: {chart: vo-hr-web, version: "0.1.x", sourceRef: {kind: HelmRepository, name: %[1]s}}
  valuesFrom: [{kind: ConfigMap, name: %[1]s-values}]
  values: {replicaCount: 1}
`, s.name))
	s.apply(namedDeployment(s.name, 1, v2.repo+"@"+v2.digest))
	s.helmReleased("vo-hr-web", "0.1.0")

	st, v := s.waitStatus(rollout, "verified with the valuesFrom ConfigMap's digest", func(_ *status.App, v *verdict.Verification) bool {
		return v != nil && v.Verified
	})
	if st.Commit != "0.1.0" || st.DeployedCommit != "0.1.0" || st.Source != "flux" || st.Path != "vo-hr-web" {
		t.Errorf("status: head %q, deployed %q, source %q, path %q; want flux's chart vo-hr-web 0.1.0", st.Commit, st.DeployedCommit, st.Source, st.Path)
	}
	for _, c := range v.Containers {
		if c.GitDigest != v2.digest {
			t.Errorf("container %+v: pinned digest %s, want the valuesFrom's %s", c, c.GitDigest, v2.digest)
		}
	}
	s.apply(namedDeployment(s.name, 1, v1.repo+"@"+v1.digest)) // the chart's default, not the release's values
	s.waitStatus(rollout, "a Mismatch for the chart's default", func(_ *status.App, v *verdict.Verification) bool {
		return v != nil && !v.Verified && hasVerdict(v, verdict.Mismatch)
	})
}

// TestArgoCDPrivateHelmRepository: a chart in a private organisation's
// Helm registry on Gitea. Read anonymously it fails, naming the
// repository and the 401, and never showing a credential; with Argo CD's
// repository Secret for its URL, pinbot logs in as Argo CD does and the
// app is Verified.
func TestArgoCDPrivateHelmRepository(t *testing.T) {
	s := newDeployerScenario(t, "vo-private", "argocd")
	c, err := env.gitea.Client(testCtx)
	if err != nil {
		t.Fatal(err)
	}
	const owner = "vo-private-charts"
	if _, _, err := c.CreateOrg(sdk.CreateOrgOption{Name: owner, Visibility: sdk.VisibleTypePrivate}); err != nil {
		t.Fatal(err)
	}
	img := pushImage(t, "vo-private-app", "v1")
	base := uploadHelmChartTo(t, owner, chartArchive(t, "web", "1.0.0", img))
	s.create(applicationsRes, "argocd", fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s, namespace: argocd}
spec:
  project: default
  source: {repoURL: %q, chart: web, targetRevision: 1.0.0}
  destination: {server: "https://kubernetes.default.svc", namespace: %s}
`, s.name, base, s.name))
	s.apply(namedDeployment(s.name, 1, img.repo+"@"+img.digest))
	s.argoSynced("1.0.0", s.name)

	var passErr error
	poll.Until(t, rollout, "an error naming the private repository", func() (bool, string) {
		_, _, passErr = s.r.Status(testCtx, s.name)
		return passErr != nil && strings.Contains(passErr.Error(), "401"), fmt.Sprint(passErr)
	})
	if !strings.Contains(passErr.Error(), base) {
		t.Errorf("error %q does not name the repository %s", passErr, base)
	}

	if _, err := env.kube.CoreV1().Secrets("argocd").Create(testCtx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "repo-" + owner, Labels: map[string]string{"argocd.argoproj.io/secret-type": "repository"}},
		StringData: map[string]string{"type": "helm", "url": base, "username": env.gitea.AdminUser, "password": env.gitea.Token},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	st, _ := s.waitStatus(rollout, "verified with Argo CD's repository credentials", func(_ *status.App, v *verdict.Verification) bool {
		return v != nil && v.Verified
	})
	if strings.Contains(describe(st, nil), env.gitea.Token) {
		t.Error("the status shows the repository's password")
	}
}

// TestFluxHelmReleaseOfAGitChart: a HelmRelease of a chart's directory in
// a GitRepository, with values files read from the repository's root as
// source-controller reads them. Deployed with reconcileStrategy Revision,
// the chart version names the head commit: Pods running the prod values'
// v2 are Verified, and Pods running the chart's default v1 a Mismatch.
// Deployed with the default strategy, the version alone says whether the
// head is what Flux deployed: a head that bumps the version Flux has not
// deployed yet leaves the app OutOfSync and not verified.
func TestFluxHelmReleaseOfAGitChart(t *testing.T) {
	s := newDeployerScenario(t, "vo-hr-git", "flux-helm")
	v1, v2 := pushImage(t, "vo-hr-git-app", "v1"), pushImage(t, "vo-hr-git-app", "v2")
	files := func(version string) map[string]string {
		return map[string]string{
			"charts/web/Chart.yaml":         "apiVersion: v2\nname: web\nversion: " + version + "\n",
			"charts/web/values.yaml":        fmt.Sprintf("replicaCount: 1\nimage: {repository: %s, digest: %q}\n", v1.repo, v1.digest),
			"charts/web/templates/web.yaml": helmDeployment,
			"envs/prod/values.yaml":         fmt.Sprintf("image: {digest: %q}\n", v2.digest),
		}
	}
	head := s.push(files("0.1.0"), "chart and prod values")
	s.createGitRepository()
	s.create(helmReleasesRes, "flux-system", fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: %[1]s, namespace: flux-system}
spec:
  interval: 10m
  targetNamespace: %[1]s
  releaseName: %[1]s
  chart:
    spec:
      chart: ./charts/web
      reconcileStrategy: Revision
      sourceRef: {kind: GitRepository, name: %[1]s}
      valuesFiles: [charts/web/values.yaml, envs/prod/values.yaml]
`, s.name))
	s.apply(namedDeployment(s.name, 1, v2.repo+"@"+v2.digest))
	s.helmReleased("web", "0.1.0+"+head[:12])

	st, v := s.waitStatus(rollout, "verified with the prod values", func(_ *status.App, v *verdict.Verification) bool {
		return v != nil && v.Verified
	})
	if st.Commit != head || st.DeployedCommit != head[:12] || st.Path != "charts/web" || st.Sync != status.Synced {
		t.Errorf("status: head %q, deployed %q, path %q, sync %s; want charts/web at %s, Synced", st.Commit, st.DeployedCommit, st.Path, st.Sync, head)
	}
	for _, c := range v.Containers {
		if c.GitDigest != v2.digest {
			t.Errorf("container %+v: pinned digest %s, want the prod values' %s", c, c.GitDigest, v2.digest)
		}
	}
	s.apply(namedDeployment(s.name, 1, v1.repo+"@"+v1.digest)) // the chart's default, not the release's values files
	s.waitStatus(rollout, "a Mismatch for the chart's default", func(_ *status.App, v *verdict.Verification) bool {
		return v != nil && !v.Verified && hasVerdict(v, verdict.Mismatch)
	})

	// The default strategy: the version names no commit.
	s.apply(namedDeployment(s.name, 1, v2.repo+"@"+v2.digest))
	s.helmReleased("web", "0.1.0")
	st, _ = s.waitStatus(rollout, "verified by the version", func(st *status.App, v *verdict.Verification) bool {
		return v != nil && v.Verified && st.DeployedCommit == "0.1.0"
	})
	if st.Sync != status.Synced {
		t.Errorf("sync %s, want Synced: the head's chart is version 0.1.0", st.Sync)
	}
	bumped := s.push(files("0.2.0"), "bump the chart")
	st, _ = s.waitStatus(rollout, "behind the bumped head", func(st *status.App, v *verdict.Verification) bool {
		return st.Commit == bumped && v != nil && !v.Verified
	})
	if st.Sync != status.OutOfSync {
		t.Errorf("sync %s, want OutOfSync: Flux deployed 0.1.0, the head is 0.2.0", st.Sync)
	}
}

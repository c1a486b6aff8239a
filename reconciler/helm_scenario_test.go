package reconciler_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// helmChart is the files of a chart at app/: a Deployment and a
// pre-install hook Job running repo@digest (from the values), a ConfigMap
// naming the cluster's version (.Capabilities, with a kubeVersion
// constraint Helm's test default v1.20 fails), a helm test Pod, and a
// dependency "cache" in charts/ whose ConfigMap the values size. The
// chart's own values pin a digest nobody pushed, values-base.yaml pins
// baseDigest and sizes the cache medium, values-prod.yaml sizes it large.
func helmChart(node, repo, baseDigest string) map[string]string {
	return map[string]string{
		"app/Chart.yaml": `apiVersion: v2
name: web
version: 0.1.0
kubeVersion: ">=1.25.0-0"
dependencies:
  - name: cache
    version: 0.1.0
    repository: https://charts.example/
`,
		"app/values.yaml": fmt.Sprintf(`replicaCount: 1
node: %s
image:
  repository: %s
  digest: sha256:%s
cache:
  size: small
`, node, repo, strings.Repeat("0", 64)),
		"app/values-base.yaml": fmt.Sprintf("image:\n  digest: %s\ncache:\n  size: medium\n", baseDigest),
		"app/values-prod.yaml": "cache:\n  size: large\n",
		"app/templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels: {app: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
    spec:
      nodeSelector: {pinbot.dev/test-node: {{ .Values.node }}}
      containers:
        - name: app
          image: "{{ .Values.image.repository }}@{{ .Values.image.digest }}"
`,
		"app/templates/migrate.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {pinbot.dev/test-node: {{ .Values.node }}}
      containers:
        - name: migrate
          image: "{{ .Values.image.repository }}@{{ .Values.image.digest }}"
`,
		"app/templates/cluster.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: cluster
data:
  kubeVersion: {{ .Capabilities.KubeVersion.Version | quote }}
  policyAPI: {{ .Capabilities.APIVersions.Has "policy/v1/PodDisruptionBudget" | quote }}
`,
		"app/templates/tests/smoke.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: smoke
  annotations: {helm.sh/hook: test}
spec:
  containers: [{name: smoke, image: busybox}]
`,
		"app/charts/cache/Chart.yaml":               "apiVersion: v2\nname: cache\nversion: 0.1.0\n",
		"app/charts/cache/values.yaml":              "size: tiny\n",
		"app/charts/cache/templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cache\ndata:\n  size: {{ .Values.size | quote }}\n",
	}
}

// A Helm chart app of pinbot's own (issue 10, part 2): synced, then
// verified. Its pre-install hook Job runs in the first wave and completes
// before the Deployment is applied; a second sync of the same commit runs
// the hook again as little as it changes anything else; a commit that
// changes the hook replaces its Job, which completes before the
// Deployment's update.
func TestHelmChartApp(t *testing.T) {
	s := newScenario(t, "helmchart", "{}", "allowNamespaces: [helmchart]",
		"helm: {valueFiles: [values-base.yaml, values-prod.yaml], values: {replicaCount: 2}}")
	const run = 2 * time.Second
	wavesNode(t, "helmchart", run)
	img := pushImage(t, "helmchart-app", "v1")
	commit := s.push(helmChart("helmchart", img.repo, img.digest), "A Helm chart")

	plan, err := s.r.DryRun(testCtx, s.name)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range plan.Waves {
		for _, o := range w.Objects {
			got = append(got, strings.TrimSpace(fmt.Sprintf("%s %d %s %s %s%s", w.Phase, w.Wave, o.Action, o.Object, o.Error, o.Note)))
		}
	}
	want := []string{
		"PreSync 0 create Job helmchart/helmchart-migrate",
		"0 create ConfigMap helmchart/cache",
		"0 create ConfigMap helmchart/cluster",
		"0 create Deployment helmchart/helmchart",
	}
	if diff := cmp.Diff(want, got); diff != "" || plan.Failed() {
		t.Fatalf("dry run (-want +got):\n%s", diff)
	}

	if _, _, err := s.r.Sync(testCtx, s.name, 0); err != nil {
		t.Fatalf("sync: %s", err)
	}
	jobs := env.kube.BatchV1().Jobs(s.name)
	job, err := jobs.Get(testCtx, "helmchart-migrate", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	web, err := env.kube.AppsV1().Deployments(s.name).Get(testCtx, "helmchart", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if job.Status.CompletionTime == nil {
		t.Fatalf("hook Job not completed when the sync returned: %+v", job.Status)
	}
	if completed, created := job.Status.CompletionTime.Time, web.CreationTimestamp.Time; completed.After(created) || created.Sub(job.CreationTimestamp.Time) < run {
		t.Errorf("hook Job created %s, completed %s; Deployment created %s: want the Deployment after the Job's completion", job.CreationTimestamp, completed, created)
	}
	if *web.Spec.Replicas != 2 || web.Spec.Template.Spec.Containers[0].Image != img.ref() {
		t.Errorf("Deployment: %d replicas of %s, want 2 (the config's values) of %s (values-base.yaml)", *web.Spec.Replicas, web.Spec.Template.Spec.Containers[0].Image, img.ref())
	}
	version, err := env.kube.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	cms := env.kube.CoreV1().ConfigMaps(s.name)
	cluster, err := cms.Get(testCtx, "cluster", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"kubeVersion": version.GitVersion, "policyAPI": "true"}; !cmp.Equal(want, cluster.Data) {
		t.Errorf("ConfigMap cluster = %v, want %v (the cluster's discovery)", cluster.Data, want)
	}
	cache, err := cms.Get(testCtx, "cache", metav1.GetOptions{})
	if err != nil || cache.Data["size"] != "large" {
		t.Errorf("ConfigMap cache of the dependency: %v %v, want size large (values-prod.yaml over values-base.yaml)", cache.Data, err)
	}
	if _, err := env.kube.CoreV1().Pods(s.name).Get(testCtx, "smoke", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the helm test Pod: %v, want it never applied", err)
	}
	first := s.latest()
	if first.Commit != commit || first.Result != history.Applied || first.Applied != 4 {
		t.Errorf("history entry %+v, want 4 objects applied at %s", first, commit)
	}
	st, _ := s.waitStatus(2*time.Minute, "verified", func(st *status.App, v *verdict.Verification) bool {
		return st.Verified && st.Sync == status.Synced && v != nil && len(v.Containers) == 2
	})
	if st.Health != verdict.Healthy || st.Commit != commit {
		t.Errorf("status: %s at %s", describe(st, nil), st.Commit)
	}

	// A second sync of the same commit changes nothing: the hook is not
	// applied (nor run) again, and the other objects are as they were.
	before := snapshot(t, s.name)
	if _, _, err := s.r.Sync(testCtx, s.name, 0); err != nil {
		t.Fatalf("second sync: %s", err)
	}
	if diff := cmp.Diff(before, snapshot(t, s.name)); diff != "" {
		t.Errorf("the second sync of the same commit changed the cluster (-before +after):\n%s", diff)
	}
	if e := s.latest(); e.Commit != commit || e.Result != history.Applied || e.Applied != 3 {
		t.Errorf("second sync's history entry %+v, want 3 objects applied (the hook kept)", e)
	}
	d, err := s.r.Diff(testCtx, s.name)
	if err != nil {
		t.Fatal(err)
	}
	if !d.InSync() || len(d.Fields)+len(d.Missing)+len(d.Orphaned) != 0 {
		t.Errorf("diff after the second sync: %+v, want in sync", d)
	}

	// A new commit that changes the hook (a new digest in values-base.yaml):
	// its Job is replaced, and the new run completes before the Deployment
	// is updated.
	img2 := pushImage(t, "helmchart-app", "v2")
	s.push(helmChart("helmchart", img2.repo, img2.digest), "A new digest")
	if _, _, err := s.r.Sync(testCtx, s.name, 0); err != nil {
		t.Fatalf("sync of the new digest: %s", err)
	}
	job2, err := jobs.Get(testCtx, "helmchart-migrate", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if job2.UID == job.UID || job2.Status.CompletionTime == nil || job2.Spec.Template.Spec.Containers[0].Image != img2.ref() {
		t.Fatalf("hook Job after the new commit: uid %s (was %s), completed %v, image %s; want a new, completed run of %s",
			job2.UID, job.UID, job2.Status.CompletionTime, job2.Spec.Template.Spec.Containers[0].Image, img2.ref())
	}
	web2, err := env.kube.AppsV1().Deployments(s.name).Get(testCtx, "helmchart", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if applied := appliedAt(web2.ManagedFields); web2.Spec.Template.Spec.Containers[0].Image != img2.ref() || applied.Before(job2.Status.CompletionTime.Time.Truncate(time.Second)) {
		t.Errorf("Deployment image %s applied at %s, hook Job completed at %s: want %s after the hook", web2.Spec.Template.Spec.Containers[0].Image, applied, job2.Status.CompletionTime, img2.ref())
	}
	s.waitStatus(2*time.Minute, "verified on the new digest", func(st *status.App, v *verdict.Verification) bool {
		return st.Verified && v != nil && len(v.Containers) == 2 && v.Containers[0].GitDigest == img2.digest
	})
}

// snapshot is what a sync could change in the app's namespace: each
// object's identity and resourceVersion (a Deployment's generation, since
// its controller writes its status), and the hook Job's Pods.
func snapshot(t *testing.T, ns string) []string {
	t.Helper()
	var out []string
	cms, err := env.kube.CoreV1().ConfigMaps(ns).List(testCtx, metav1.ListOptions{LabelSelector: object.LabelApp + "=" + ns})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cms.Items {
		out = append(out, fmt.Sprintf("ConfigMap/%s uid %s rv %s", c.Name, c.UID, c.ResourceVersion))
	}
	ds, err := env.kube.AppsV1().Deployments(ns).List(testCtx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds.Items {
		out = append(out, fmt.Sprintf("Deployment/%s uid %s generation %d", d.Name, d.UID, d.Generation))
	}
	js, err := env.kube.BatchV1().Jobs(ns).List(testCtx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range js.Items {
		out = append(out, fmt.Sprintf("Job/%s uid %s rv %s succeeded %d", j.Name, j.UID, j.ResourceVersion, j.Status.Succeeded))
	}
	pods, err := env.kube.CoreV1().Pods(ns).List(testCtx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		out = append(out, fmt.Sprintf("Pod/%s uid %s", p.Name, p.UID))
	}
	return out
}

// appliedAt is when field manager pinbot last applied the object.
func appliedAt(mfs []metav1.ManagedFieldsEntry) time.Time {
	for _, mf := range mfs {
		if mf.Manager == object.FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply && mf.Time != nil {
			return mf.Time.Time
		}
	}
	return time.Time{}
}

package deploy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/kustomize/api/resmap"

	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/record"
	"pinbot.dev/pinbot/reconciler/status"
)

// The ServiceAccount deploy/ runs pinbot as, as the API server
// authenticates its token.
const saUser = "system:serviceaccount:" + stateNamespace + ":pinbot"

var saGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + stateNamespace, "system:authenticated"}

// access is one request of the ServiceAccount, as a SubjectAccessReview
// asks about it. A list or watch with a name is one with a metadata.name
// field selector, as an informer of one object makes it.
type access struct {
	verb, group, resource, subresource, namespace, name string
	why                                                 string
}

func (a access) String() string {
	r := a.resource
	if a.group != "" {
		r += "." + a.group
	}
	if a.subresource != "" {
		r += "/" + a.subresource
	}
	where := "cluster-wide"
	if a.namespace != "" {
		where = "in " + a.namespace
	}
	if a.name != "" {
		r += " " + a.name
	}
	return fmt.Sprintf("%s %s %s (%s)", a.verb, r, where, a.why)
}

// TestDeployOnControlPlane applies `kustomize build` of the base, then of
// the example overlay, to a fresh real control plane and asks the API
// server, with SubjectAccessReviews, what the ServiceAccount pinbot may
// do: each thing pinbot does is allowed, each thing the docs say it cannot
// do is denied; and so for the optional components. The history, the
// trigger and the Lease are then driven for real under the
// ServiceAccount's identity.
func TestDeployOnControlPlane(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs the control plane binaries in bin/ (make kube)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cluster, a := startCluster(ctx, t)
	admin := kubernetes.NewForConfigOrDie(cluster.Config())
	ask := reviewer(admin)

	// The base alone, on the fresh cluster: it creates its namespace and
	// applies with no error, and grants nothing in an app namespace nor
	// any deployer read.
	applyAll(ctx, t, a, resources(t, build(t, "base")))
	waitAllowed(ctx, t, ask, allowed[2])
	t.Run("base denied", func(t *testing.T) {
		for _, q := range slices.Concat(denied, deployerReads, deployerDenied, appAccess) {
			if ok, reason := ask(ctx, t, q); ok {
				t.Errorf("allowed by the base alone: %s: %s", q, reason)
			}
		}
	})

	// The example overlay on top, as an upgrade-free install would have it.
	applyAll(ctx, t, a, resources(t, build(t, "overlays/example")))
	if _, err := admin.AppsV1().Deployments(stateNamespace).Get(ctx, "pinbot", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after the dry run, Deployment pinbot: %v, want NotFound", err)
	}
	waitAllowed(ctx, t, ask, appAccess[0])
	checkAccess(ctx, t, ask)

	sa := rest.CopyConfig(cluster.Config())
	sa.Impersonate = rest.ImpersonationConfig{UserName: saUser, Groups: saGroups}
	saKube := kubernetes.NewForConfigOrDie(sa)
	t.Run("history", func(t *testing.T) { testHistory(ctx, t, saKube) })
	t.Run("trigger", func(t *testing.T) { testTrigger(ctx, t, saKube) })
	t.Run("lease", func(t *testing.T) { testLease(ctx, t, saKube, admin) })
	t.Run("deployers", func(t *testing.T) {
		// The real Application CRD serves what the review allowed.
		apps := dynamic.NewForConfigOrDie(sa).Resource(schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}).Namespace("argocd")
		if _, err := apps.List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("listing Applications with the deployers component: %v", err)
		}
	})
	t.Run("argocd clusters", func(t *testing.T) {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		read := access{"list", "", "secrets", "", "argocd", "", "a spoke's app reads Argo CD's cluster Secrets"}
		if ok, _ := ask(ctx, t, read); ok {
			t.Fatalf("allowed before the argocd-clusters component: %s", read)
		}
		withClusters := buildWith(t, "overlays/mine", map[string]string{
			"overlays/mine/kustomization.yaml": "resources: [../example]\ncomponents: [../../components/argocd-clusters]\n",
		})
		applyAccess(ctx, t, a, resources(t, withClusters))
		waitAllowed(ctx, t, ask, read)
		if ok, reason := ask(ctx, t, access{"get", "", "secrets", "", "argocd", "cluster-prod", "and gets one"}); !ok {
			t.Errorf("denied: get a cluster Secret: %s", reason)
		}
		for _, q := range []access{
			{"get", "", "secrets", "", "pinbot-system", "spoke-kubeconfig", "read a kubeconfig Secret without the clusters component"},
			{"list", "", "secrets", "", "kube-system", "", "read Secrets outside Argo CD's namespace"},
			{"update", "", "secrets", "", "argocd", "cluster-prod", "write a cluster Secret"},
			{"create", "", "secrets", "", "argocd", "", "create a Secret in Argo CD's namespace"},
			{"watch", "", "secrets", "", "argocd", "", "watch Argo CD's Secrets"},
		} {
			if ok, reason := ask(ctx, t, q); ok {
				t.Errorf("allowed: %s: %s", q, reason)
			}
		}
	})
	t.Run("shards", func(t *testing.T) {
		list := access{"list", "coordination.k8s.io", "leases", "", "pinbot-system", "", "a sharded replica lists the member Leases"}
		sharded := buildWith(t, "overlays/sharded", map[string]string{
			"overlays/sharded/kustomization.yaml": "resources: [../example]\ncomponents: [../../components/shards]\n",
		})
		objs := resources(t, sharded)
		applyAccess(ctx, t, a, objs)
		waitAllowed(ctx, t, ask, list)
		for _, q := range []access{
			{"delete", "coordination.k8s.io", "leases", "", "pinbot-system", "pinbot-member-gone", "delete a gone member's Lease"},
			{"patch", "coordination.k8s.io", "leases", "", "pinbot-system", "pinbot-member-pinbot-0", "renew its member Lease"},
			{"update", "coordination.k8s.io", "leases", "", "pinbot-system", "pinbot-shard-2", "renew a shard's Lease"},
		} {
			if ok, reason := ask(ctx, t, q); !ok {
				t.Errorf("denied: %s: %s", q, reason)
			}
		}
		if ok, reason := ask(ctx, t, access{"delete", "coordination.k8s.io", "leases", "", "kube-system", "kube-scheduler", "delete a Lease outside pinbot's namespace"}); ok {
			t.Errorf("allowed: delete a Lease in kube-system: %s", reason)
		}
		found := false
		for _, o := range objs {
			if o.GetKind() != "Deployment" {
				continue
			}
			found = strings.Contains(fmt.Sprint(o.Object["spec"]), "--shards=6")
		}
		if !found {
			t.Error("the shards component does not pass --shards=6 to serve")
		}
	})
	t.Run("clusters", func(t *testing.T) {
		read := access{"get", "", "secrets", "", "pinbot-system", "spoke-kubeconfig", "an app with cluster: reads its kubeconfig Secret"}
		withClusters := buildWith(t, "overlays/spokes", map[string]string{
			"overlays/spokes/kustomization.yaml": "resources: [../example]\ncomponents: [../../components/clusters]\n",
		})
		applyAccess(ctx, t, a, resources(t, withClusters))
		waitAllowed(ctx, t, ask, read)
		for _, q := range []access{
			{"list", "", "secrets", "", "pinbot-system", "", "list pinbot's Secrets"},
			{"update", "", "secrets", "", "pinbot-system", "spoke-kubeconfig", "write a kubeconfig Secret"},
			{"get", "", "secrets", "", "default", "spoke-kubeconfig", "read Secrets outside pinbot's namespace"},
		} {
			if ok, reason := ask(ctx, t, q); ok {
				t.Errorf("allowed: %s: %s", q, reason)
			}
		}
	})
}

// startCluster starts a real control plane with the deployers' CRDs
// installed, and an applier as its admin.
func startCluster(ctx context.Context, t *testing.T) (*kube.Cluster, *applier) {
	t.Helper()
	cluster, err := kube.Start(ctx, kube.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("control plane logs:\n%s", cluster.Tail(30))
		}
		if err := cluster.Stop(); err != nil {
			t.Errorf("stopping the control plane: %s", err)
		}
	})
	if err := cluster.InstallNamedCRDs(ctx, kube.ApplicationCRD, kube.KustomizationCRD, kube.GitRepositoryCRD); err != nil {
		t.Fatal(err)
	}
	admin := kubernetes.NewForConfigOrDie(cluster.Config())
	return cluster, &applier{
		dyn:    dynamic.NewForConfigOrDie(cluster.Config()),
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(admin.Discovery())),
	}
}

// applyAll applies objs as an install does: the Namespaces for real, since
// every other object lives in one; then every object with a server-side
// dry run, which validates and admits each as a real apply would,
// persisting nothing; then the ServiceAccount and its RBAC for real, so
// SubjectAccessReviews evaluate them.
func applyAll(ctx context.Context, t *testing.T, a *applier, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			a.apply(ctx, t, o, false)
		}
	}
	for _, o := range objs {
		a.apply(ctx, t, o, true)
	}
	applyAccess(ctx, t, a, objs)
}

// checkAccess asks what an installed pinbot may do: everything it does,
// the deployers' reads included, and nothing the docs say it cannot.
func checkAccess(ctx context.Context, t *testing.T, ask func(context.Context, *testing.T, access) (bool, string)) {
	t.Run("allowed", func(t *testing.T) {
		for _, q := range slices.Concat(allowed, appAccess, deployerReads) {
			if ok, reason := ask(ctx, t, q); !ok {
				t.Errorf("denied: %s: %s", q, reason)
			}
		}
	})
	t.Run("denied", func(t *testing.T) {
		for _, q := range slices.Concat(denied, deployerDenied) {
			if ok, reason := ask(ctx, t, q); ok {
				t.Errorf("allowed: %s: %s", q, reason)
			}
		}
	})
}

// applier applies objects as `kubectl apply --server-side` does.
type applier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func (a *applier) apply(ctx context.Context, t *testing.T, o *unstructured.Unstructured, dryRun bool) {
	t.Helper()
	gvk := o.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("mapping %s %s: %s", gvk.Kind, o.GetName(), err)
	}
	var ri dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ri = a.dyn.Resource(m.Resource).Namespace(o.GetNamespace())
	}
	opts := metav1.ApplyOptions{FieldManager: "kubectl", Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if _, err := ri.Apply(ctx, o.GetName(), o, opts); err != nil {
		t.Fatalf("applying %s %s (dry run: %v): %s", gvk.Kind, o.GetName(), dryRun, err)
	}
}

// applyAccess applies the ServiceAccount and the RBAC objects of objs for
// real.
func applyAccess(ctx context.Context, t *testing.T, a *applier, objs []*unstructured.Unstructured) {
	t.Helper()
	n := 0
	for _, o := range objs {
		if o.GetKind() == "ServiceAccount" || o.GroupVersionKind().Group == "rbac.authorization.k8s.io" {
			a.apply(ctx, t, o, false)
			n++
		}
	}
	if n == 0 {
		t.Fatal("kustomize build deploy holds no ServiceAccount or RBAC")
	}
}

// resources returns the objects of m.
func resources(t *testing.T, m resmap.ResMap) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, r := range m.Resources() {
		obj, err := r.Map()
		if err != nil {
			t.Fatalf("%s %s: %s", r.GetKind(), r.GetName(), err)
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
	return out
}

// reviewer asks the API server whether the ServiceAccount may do q.
func reviewer(admin kubernetes.Interface) func(context.Context, *testing.T, access) (bool, string) {
	return func(ctx context.Context, t *testing.T, q access) (bool, string) {
		t.Helper()
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: saUser, Groups: saGroups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: q.verb, Group: q.group, Resource: q.resource, Subresource: q.subresource, Namespace: q.namespace, Name: q.name,
			},
		}}
		got, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("reviewing %s: %s", q, err)
		}
		return got.Status.Allowed, got.Status.Reason + got.Status.EvaluationError
	}
}

// waitAllowed polls until q is allowed: the RBAC authorizer sees new
// grants through its informers, a moment after they are written.
func waitAllowed(ctx context.Context, t *testing.T, ask func(context.Context, *testing.T, access) (bool, string), q access) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		ok, _ := ask(ctx, t, q)
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for the new RBAC to allow %s: %s", q, err)
	}
}

// testHistory writes an app's history twice (create, then update) and
// reads it back, with the reconciler's own History, as the ServiceAccount.
func testHistory(ctx context.Context, t *testing.T, saKube kubernetes.Interface) {
	if _, err := saKube.CoreV1().Namespaces().Get(ctx, stateNamespace, metav1.GetOptions{}); err != nil {
		t.Fatalf("reading the state namespace: %s", err)
	}
	h := record.New(saKube, stateNamespace)
	if err := h.Check(ctx); err != nil {
		t.Fatal(err)
	}
	// Another state namespace than deploy/'s: the ServiceAccount may not
	// read it, and the check must still stop rather than pass silently.
	err := record.New(saKube, "pinbot-elsewhere").Check(ctx)
	if !errors.Is(err, record.ErrNoStateNamespace) || !strings.Contains(err.Error(), `"pinbot-elsewhere"`) {
		t.Errorf("History.Check of a namespace the ServiceAccount cannot see = %v, want ErrNoStateNamespace naming it", err)
	}
	for _, commit := range []string{"c1", "c2"} {
		err := h.Update(ctx, "web", func(r *history.Record) bool {
			r.Status = &status.App{App: "web", Commit: commit}
			return true
		})
		if err != nil {
			t.Fatalf("writing the history (commit %s): %s", commit, err)
		}
	}
	rec, err := h.Get(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status == nil || rec.Status.Commit != "c2" {
		t.Errorf("the history reads back %+v, want commit c2", rec.Status)
	}
}

// testTrigger forwards a webhook as a follower does (create, then merge
// patch pinbot-trigger) and reads it as the leader's informer does (list
// and watch by a metadata.name field selector); a list of every ConfigMap
// is refused.
func testTrigger(ctx context.Context, t *testing.T, saKube kubernetes.Interface) {
	cms := saKube.CoreV1().ConfigMaps(stateNamespace)
	trigger := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pinbot-trigger", Annotations: map[string]string{"apps.pinbot.dev/web": "1"}}}
	if _, err := cms.Create(ctx, trigger, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the trigger: %s", err)
	}
	patch := []byte(`{"metadata":{"annotations":{"apps.pinbot.dev/web":"2"}}}`)
	if _, err := cms.Patch(ctx, "pinbot-trigger", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching the trigger: %s", err)
	}
	byName := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "pinbot-trigger").String()}
	list, err := cms.List(ctx, byName)
	if err != nil {
		t.Fatalf("listing the trigger by name: %s", err)
	}
	if len(list.Items) != 1 || list.Items[0].Annotations["apps.pinbot.dev/web"] != "2" {
		t.Errorf("listing the trigger by name: %+v, want it with the patched annotation", list.Items)
	}
	byName.ResourceVersion = list.ResourceVersion
	w, err := cms.Watch(ctx, byName)
	if err != nil {
		t.Fatalf("watching the trigger by name: %s", err)
	}
	w.Stop()
	if _, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=pinbot"}); err != nil {
		t.Errorf("listing the records of %s: %v", stateNamespace, err)
	}
	if err := cms.Delete(ctx, "pinbot-trigger", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("deleting the trigger of %s: %v, want Forbidden", stateNamespace, err)
	}
}

// testLease runs client-go's leader election on the Lease pinbot as serve
// does, as the ServiceAccount: it creates the Lease, leads, and on cancel
// releases it.
func testLease(ctx context.Context, t *testing.T, saKube, admin kubernetes.Interface) {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: "pinbot", Namespace: stateNamespace},
		Client:     saKube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: "pinbot-0"},
	}
	led := make(chan struct{})
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
		ReleaseOnCancel: true, Name: "pinbot",
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { close(led) },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	lctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); le.Run(lctx) }()
	select {
	case <-led:
	case <-time.After(30 * time.Second):
		stop()
		<-done
		t.Fatal("the ServiceAccount did not take the Lease within 30 s")
	}
	holder := func() string {
		l, err := admin.CoordinationV1().Leases(stateNamespace).Get(ctx, "pinbot", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	if h := holder(); h != "pinbot-0" {
		t.Errorf("Lease holder %q while leading, want pinbot-0", h)
	}
	stop()
	<-done
	if h := holder(); h != "" {
		t.Errorf("Lease holder %q after the release, want none", h)
	}
}

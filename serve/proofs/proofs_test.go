package proofs

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// TestOf: Ready only for a verified, healthy app; otherwise Reconciling
// (a rollout or proof pending) or Stalled (a mismatch, a degraded app),
// for kstatus reads a resource with neither as Current.
func TestOf(t *testing.T) {
	ready := &verdict.Verification{Containers: []verdict.ContainerVerdict{{Ready: true}, {Ready: true}}}
	starting := &verdict.Verification{Containers: []verdict.ContainerVerdict{{Ready: true}, {Ready: false}}}
	crashing := &verdict.Verification{Containers: []verdict.ContainerVerdict{{Ready: true}, {Waiting: "CrashLoopBackOff"}}}
	for _, tc := range []struct {
		name              string
		s                 *status.App
		v                 *verdict.Verification
		ready, also, want string
	}{
		{"no pass yet", nil, nil, "Unknown", Reconciling, "NoPass"},
		{"verified, every container ready", &status.App{Proof: verdict.Verified}, ready, "True", "", "Verified"},
		// The app's health is not asked: Argo CD's includes the Proof.
		{"verified, the deployer's health still progressing", &status.App{Proof: verdict.Verified, Health: verdict.Progressing}, ready, "True", "", "Verified"},
		{"verified, a container not ready", &status.App{Proof: verdict.Verified}, starting, "False", Reconciling, "NotReady"},
		{"pending", &status.App{Proof: verdict.Pending}, starting, "False", Reconciling, "Pending"},
		{"inconclusive", &status.App{Proof: verdict.Inconclusive}, ready, "False", Reconciling, "Inconclusive"},
		{"mismatch", &status.App{Proof: verdict.Mismatch}, ready, "False", Stalled, "Mismatch"},
		{"a container crashing", &status.App{Proof: verdict.Pending}, crashing, "False", Stalled, "Degraded"},
		{"a failed pass", &status.App{Proof: verdict.Verified, Error: "source unreachable"}, ready, "False", Reconciling, "PassFailed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Of("web", tc.s, tc.v)
			if got.Conditions[0].Type != Ready || string(got.Conditions[0].Status) != tc.ready || got.Conditions[0].Reason != tc.want {
				t.Errorf("Ready = %+v, want %s (%s)", got.Conditions[0], tc.ready, tc.want)
			}
			switch {
			case tc.also == "" && len(got.Conditions) != 1:
				t.Errorf("conditions %+v, want Ready alone", got.Conditions)
			case tc.also != "" && (len(got.Conditions) != 2 || got.Conditions[1].Type != tc.also || got.Conditions[1].Status != metav1.ConditionTrue):
				t.Errorf("conditions %+v, want %s True beside Ready", got.Conditions, tc.also)
			}
		})
	}
}

type source struct {
	cfg *config.Config
	s   *status.App
	v   *verdict.Verification
	// on is the cluster the app runs on, by name ("" for pinbot's own).
	on     string
	client dynamic.Interface
}

func (s *source) Last(string) (*status.App, *verdict.Verification, error) { return s.s, s.v, nil }
func (s *source) Config() *config.Config                                  { return s.cfg }
func (s *source) RunsOn(string) (string, dynamic.Interface, bool)         { return s.on, s.client, true }

// TestPublisherOnARealAPIServer: the Proof of an app goes through its
// life on a real API server with the CRD the chart ships, and kstatus
// (what Flux's health checks and kubectl wait use) reads it as pinbot
// means it: InProgress while pending, Current once proven, Failed on a
// mismatch that lasts MismatchGrace. A write that would say nothing new is not made (the
// resourceVersion stays), Ready's lastTransitionTime says since when,
// and an edit by someone else is written over at the next change and
// logged.
func TestPublisherOnARealAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs the control plane binaries in bin/ (make kube)")
	}
	ctx := context.Background()
	var logs bytes.Buffer
	ctx = logctx.Into(ctx, slog.New(slog.NewTextHandler(&logs, nil)))
	c, err := kube.Start(ctx, kube.Options{})
	if err != nil {
		t.Fatalf("starting the control plane: %s", err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	client, err := dynamic.NewForConfig(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	src := &source{cfg: &config.Config{Apps: []config.App{{Name: "web", Namespace: "web"}}}}
	if err := New(client, src).Write(ctx, "web"); !errors.Is(err, ErrNoCRD) {
		t.Errorf("writing a Proof before the CRD is installed: %v, want ErrNoCRD", err)
	}
	if err := c.InstallCRDs(ctx, filepath.Join("..", "..", "charts", "pinbot", "crds", "proofs.pinbot.dev.yaml")); err != nil {
		t.Fatal(err)
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "web"}}}
	if _, err := client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := New(client, src)
	clock := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	p.now = func() time.Time { return clock }
	v := &verdict.Verification{Containers: []verdict.ContainerVerdict{{Namespace: "web", Pod: "web-1", Container: "app", GitDigest: "sha256:aa", RunningDigest: "sha256:0ld", Ready: true}}}
	write := func(proof verdict.Verdict, health verdict.Health) (*unstructured.Unstructured, kstatus.Status) {
		t.Helper()
		src.s, src.v = &status.App{Commit: "c0ffee", Proof: proof, Health: health, Verification: string(proof)}, v
		if err := p.Write(ctx, "web"); err != nil {
			t.Fatal(err)
		}
		obj, err := client.Resource(GVR).Namespace("web").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := kstatus.Compute(obj)
		if err != nil {
			t.Fatal(err)
		}
		return obj, res.Status
	}

	if _, st := write(verdict.Pending, verdict.Progressing); st != kstatus.InProgressStatus {
		t.Errorf("pending: kstatus %s, want InProgress", st)
	}
	clock = clock.Add(time.Minute)
	v.Containers[0].RunningDigest = "sha256:aa"
	obj, st := write(verdict.Verified, verdict.Healthy)
	if st != kstatus.CurrentStatus {
		t.Errorf("proven: kstatus %s, want Current", st)
	}
	if got, _, _ := unstructured.NestedStringSlice(obj.Object, "status", "running"); len(got) != 1 || got[0] != "sha256:aa" {
		t.Errorf("status.running %v, want the pinned digest", got)
	}
	rv := obj.GetResourceVersion()
	clock = clock.Add(time.Minute)
	if again, _ := write(verdict.Verified, verdict.Healthy); again.GetResourceVersion() != rv {
		t.Error("the same proof written again: its resourceVersion moved")
	}
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	if since := conds[0].(map[string]any)["lastTransitionTime"]; since != "2026-12-06T09:01:00Z" {
		t.Errorf("Ready since %v, want when it became True", since)
	}

	// Someone marks a mismatching app Ready by hand; the next change
	// writes pinbot's Proof over it, and says so.
	_ = unstructured.SetNestedField(obj.Object, "all good, trust me", "status", "summary")
	if _, err := client.Resource(GVR).Namespace("web").UpdateStatus(ctx, obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A mismatch is Reconciling for MismatchGrace (a rollout's first
	// pass may see the Pods before the object that declares the new
	// digest), then Stalled.
	v.Containers[0].RunningDigest = "sha256:0ld"
	if _, st := write(verdict.Mismatch, verdict.Healthy); st != kstatus.InProgressStatus {
		t.Errorf("a fresh mismatch: kstatus %s, want InProgress", st)
	}
	clock = clock.Add(MismatchGrace + time.Second)
	if _, st := write(verdict.Mismatch, verdict.Healthy); st != kstatus.FailedStatus {
		t.Errorf("a mismatch that lasted: kstatus %s, want Failed", st)
	}
	if !strings.Contains(logs.String(), "edited by someone else") {
		t.Errorf("the edit was not logged:\n%s", logs.String())
	}

	// An app that opts out gets none.
	no := false
	src.cfg.Apps = append(src.cfg.Apps, config.App{Name: "quiet", Namespace: "web", ProofObject: &no})
	if err := p.Write(ctx, "quiet"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Resource(GVR).Namespace("web").Get(ctx, "quiet", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Proof of an app with proofObject: false: %v, want none", err)
	}
}

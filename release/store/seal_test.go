package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/release"
)

// TestAConfigMapWriterCannotEditTheLedger: on a real API server, mallory
// may write every ConfigMap in the state namespace but read no Secret.
// Before the seal, she lifted a hold by deleting it from the ledger's
// JSON, and the gate admitted the held digest. Now every change she makes
// (an edit, a stripped seal, an older sealed version put back, a
// deletion) is refused as ErrTampered by the gate, and serve's Ledgers,
// which saw the true version, writes it back; nor can she write through
// the store, which needs the key. Someone who may read the key accepts
// the ledger as it stands with Reseal.
func TestAConfigMapWriterCannotEditTheLedger(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs the control plane binaries in bin/ (make kube)")
	}
	ctx := context.Background()
	admin, mallory := configMapWriter(t, "pinbot-system")
	const repo, img, held = "acme/manifests", "r.example/web", "sha256:0bad0bad0bad"
	serve := New(admin, "pinbot-system")
	hold := func(digest string) {
		t.Helper()
		if err := serve.Update(ctx, repo, func(l *release.Ledger) error {
			l.Holds = append(l.Holds, release.Hold{Env: "prod", Image: img, Digest: digest, Reason: "crash loop", Since: time.Now()})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	hold(held)
	if _, err := mallory.CoreV1().Secrets("pinbot-system").Get(ctx, KeySecret, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("mallory reads the key: %v; the test needs her not to", err)
	}
	if _, err := New(mallory, "pinbot-system").Release(ctx, []string{repo}, "prod", img, held, "mallory", "no reason", time.Now()); err == nil {
		t.Error("mallory released the hold through the store without the key")
	}
	admitted := func(l *Ledgers) error {
		return Gate{Ledgers: l, Repo: repo}.Admit(ctx, release.Admission{Env: "prod", Image: img, Digest: held, Force: true})
	}

	// A replay is seen only by a reader that saw a newer version (see
	// docs/security.md); a fresh one sees the others.
	for _, tc := range []struct {
		name, why string
		edit      func(cm *corev1.ConfigMap)
		reader    *Ledgers
	}{
		{"the hold deleted from the JSON", "its seal does not match", func(cm *corev1.ConfigMap) {
			cm.Data[ledgerKey] = strings.Replace(cm.Data[ledgerKey], held, "sha256:0ther", 1)
		}, New(admin, "pinbot-system")},
		{"the seal stripped", "carries no seal", func(cm *corev1.ConfigMap) {
			delete(cm.Data, sealField)
			cm.Data[ledgerKey] = `{"envs":{}}`
		}, New(admin, "pinbot-system")},
		{"an older sealed version put back", "an older version", nil, serve}, // edit set below
	} {
		before := rawLedger(t, admin)
		if tc.edit == nil {
			// The version with no hold yet: what the ledger was before
			// the first Update wrote its hold is not kept, so make one
			// to replay: hold a second digest, then put the first back.
			hold("sha256:5ec0d")
			tc.edit = func(cm *corev1.ConfigMap) { cm.Data = before.Data }
		}
		cm := rawLedger(t, mallory)
		tc.edit(cm)
		if _, err := mallory.CoreV1().ConfigMaps("pinbot-system").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("%s: mallory's write: %s", tc.name, err)
		}
		var te *TamperedError
		if _, _, err := serve.Get(ctx, repo); !errors.As(err, &te) || !te.Restorable || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: serve reads %v; want a restorable TamperedError saying %q", tc.name, err, tc.why)
		}
		if err := admitted(tc.reader); !errors.Is(err, ErrTampered) {
			t.Errorf("%s: the gate says %v; want ErrTampered", tc.name, err)
		}
		if err := serve.Restore(ctx, repo, "test", time.Now()); err != nil {
			t.Fatalf("%s: restoring: %s", tc.name, err)
		}
		var refusal *release.Refusal
		if err := admitted(New(admin, "pinbot-system")); !errors.As(err, &refusal) || refusal.Rule != release.RuleHeld {
			t.Errorf("%s: after the restore the gate says %v; want the hold's refusal", tc.name, err)
		}
	}

	if err := mallory.CoreV1().ConfigMaps("pinbot-system").Delete(ctx, Name(repo), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := serve.Get(ctx, repo); !errors.Is(err, ErrTampered) || !strings.Contains(err.Error(), "deleted") {
		t.Errorf("the ledger deleted: serve reads %v; want ErrTampered saying it was deleted", err)
	}
	if err := serve.Restore(ctx, repo, "deleted", time.Now()); err != nil {
		t.Fatal(err)
	}
	l, _, err := New(admin, "pinbot-system").Get(ctx, repo)
	if err != nil || l.Held("prod", img, held) == nil {
		t.Fatalf("after the deletion's restore: %v; want the hold back", err)
	}
	if n := countReason(l, release.ReasonLedgerRestored); n != 4 {
		t.Errorf("the ledger notes %d restores, want 4", n)
	}

	// An edit a person who may read the key accepts.
	cm := rawLedger(t, mallory)
	cm.Data[ledgerKey] = strings.Replace(cm.Data[ledgerKey], `"crash loop"`, `"crash loop, reviewed"`, 1)
	if _, err := mallory.CoreV1().ConfigMaps("pinbot-system").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := New(mallory, "pinbot-system").Reseal(ctx, repo, "mallory", "mine", time.Now()); err == nil {
		t.Error("mallory resealed the ledger without the key")
	}
	if err := New(admin, "pinbot-system").Reseal(ctx, repo, "admin", "reviewed the edit", time.Now()); err != nil {
		t.Fatal(err)
	}
	l, _, err = serve.Get(ctx, repo)
	if err != nil || countReason(l, release.ReasonLedgerResealed) != 1 || !strings.Contains(l.Holds[0].Reason, "reviewed") {
		t.Errorf("after the reseal serve reads %v (holds %+v); want the accepted edit and its note", err, l)
	}
	aLiftSurvivesTheRestore(t, admin, mallory)
}

// aLiftSurvivesTheRestore: a person lifts a hold with the CLI, and mallory
// edits the ledger before anything reads it again. serve, which watches
// the ledgers, saw the lift go by, so its restore writes back the lifted
// version: the hold stays lifted. (Before, serve wrote back the version it
// had last read itself, and the hold came back.)
func aLiftSurvivesTheRestore(t *testing.T, admin, mallory kubernetes.Interface) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const repo, img, held = "acme/lifted", "r.example/web", "sha256:0bad0bad0bad"
	serve := New(admin, "pinbot-system")
	go serve.Watch(ctx)
	if err := serve.Update(ctx, repo, func(l *release.Ledger) error {
		l.Holds = append(l.Holds, release.Hold{Env: "prod", Image: img, Digest: held, Reason: "crash loop", Since: time.Now()})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if r, err := New(admin, "pinbot-system").Release(ctx, []string{repo}, "prod", img, held, "alice", "fixed upstream", time.Now()); err != nil || r != repo {
		t.Fatalf("alice lifts the hold: %q, %v", r, err)
	}
	lifted := rawLedgerOf(t, admin, repo).Data[seqField]
	poll.Until(t, 30*time.Second, "serve's watch to deliver the lift", func() (bool, string) {
		serve.mu.Lock()
		defer serve.mu.Unlock()
		seen := strconv.FormatUint(serve.seen[repo].seq, 10)
		return seen == lifted, "serve saw version " + seen + " go by, want " + lifted
	})
	cm := rawLedgerOf(t, mallory, repo)
	cm.Data[ledgerKey] = strings.Replace(cm.Data[ledgerKey], "fixed upstream", "never mind", 1)
	if _, err := mallory.CoreV1().ConfigMaps("pinbot-system").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := serve.Get(ctx, repo); !errors.Is(err, ErrTampered) {
		t.Fatalf("serve reads mallory's edit: %v; want ErrTampered", err)
	}
	if err := serve.Restore(ctx, repo, "test", time.Now()); err != nil {
		t.Fatal(err)
	}
	l, _, err := New(admin, "pinbot-system").Get(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if h := l.Held("prod", img, held); h != nil {
		t.Errorf("after the restore the hold is back (%+v): alice's lift is lost", h)
	}
}

// rawLedgerOf is repository's ledger ConfigMap as client reads it.
func rawLedgerOf(t *testing.T, client kubernetes.Interface, repository string) *corev1.ConfigMap {
	t.Helper()
	cm, err := client.CoreV1().ConfigMaps("pinbot-system").Get(context.Background(), Name(repository), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// TestTheKeySealsWhatAnOlderPinbotWrote: a ledger written before the key
// existed is sealed as it stands when the key is made, once.
func TestTheKeySealsWhatAnOlderPinbotWrote(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs the control plane binaries in bin/ (make kube)")
	}
	ctx := context.Background()
	admin, _ := configMapWriter(t, "pinbot-system")
	const repo = "acme/manifests"
	old := `{"envs":{},"holds":[{"env":"prod","image":"r.example/web","digest":"sha256:0bad","reason":"crash loop","since":"2026-12-01T00:00:00Z"}]}`
	if _, err := admin.CoreV1().ConfigMaps("pinbot-system").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: Name(repo), Labels: map[string]string{LabelRepository: "true"}, Annotations: map[string]string{annotationRepository: repo}},
		Data:       map[string]string{ledgerKey: old},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	l, _, err := New(admin, "pinbot-system").Get(ctx, repo)
	if err != nil || len(l.Holds) != 1 {
		t.Fatalf("the older pinbot's ledger reads %v, %v; want its hold", l, err)
	}
	if cm := rawLedger(t, admin); cm.Data[sealField] == "" || cm.Data[ledgerKey] != old {
		t.Errorf("the ledger after the key was made: %v; want it sealed as it stood", cm.Data)
	}
}

// configMapWriter starts a control plane with namespace ns and returns
// the admin's client and mallory's, who may read and write every
// ConfigMap in ns and nothing else.
func configMapWriter(t *testing.T, ns string) (admin, mallory kubernetes.Interface) {
	admin, mallory, _ = configMapWriterOn(t, ns)
	return admin, mallory
}

// configMapWriterOn is configMapWriter, with the control plane.
func configMapWriterOn(t *testing.T, ns string) (admin, mallory kubernetes.Interface, c *kube.Cluster) {
	t.Helper()
	c, admin, mallory, err := kube.StartWithConfigMapWriter(context.Background(), ns, "mallory")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	return admin, mallory, c
}

func rawLedger(t *testing.T, client kubernetes.Interface) *corev1.ConfigMap {
	t.Helper()
	return rawLedgerOf(t, client, "acme/manifests")
}

func countReason(l *release.Ledger, reason string) int {
	n := 0
	for _, e := range l.Events {
		if e.Reason == reason {
			n++
		}
	}
	return n
}

// TestWhoMayWriteTheLedgers: the cluster's RBAC, asked subject by
// subject, names mallory (bound to write ConfigMaps in the namespace) as
// a writer without the key, and the cluster's admins (system:masters)
// as writers with it; a subject bound to the view role is no writer.
func TestWhoMayWriteTheLedgers(t *testing.T) {
	ctx := context.Background()
	admin, _ := configMapWriter(t, "pinbot-system")
	reader := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "vic"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "vic"}}}
	if _, err := admin.RbacV1().RoleBindings("pinbot-system").Create(ctx, reader, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ws, err := New(admin, "pinbot-system").Writers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Writer{}
	for _, w := range ws {
		got[w.Subject] = w
	}
	if m, ok := got["User mallory"]; !ok || m.Key || len(m.Bindings) != 1 || m.Bindings[0] != "RoleBinding pinbot-system/configmaps-mallory" {
		t.Errorf("mallory: %+v, %t; want a writer without the key, by her RoleBinding", m, ok)
	}
	if a, ok := got["Group system:masters"]; !ok || !a.Key {
		t.Errorf("system:masters: %+v, %t; want a writer with the key", a, ok)
	}
	if v, ok := got["User vic"]; ok {
		t.Errorf("vic, who may only view, is named a writer: %+v", v)
	}
}

package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/release"
)

// TestAReplayWhileNoReplicaRunsIsSeen: mallory, who may write ConfigMaps
// but no Secret, puts back the ledger as it was before a hold, or deletes
// it, while no replica runs. Before the marks, a replica that started
// afterwards read the older sealed version as the ledger and the hold was
// gone; now it is ErrTampered, as the deletion is, and the gate refuses,
// until someone who may read the key accepts it.
func TestAReplayWhileNoReplicaRunsIsSeen(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs the control plane binaries in bin/ (make kube)")
	}
	ctx := context.Background()
	admin, mallory := configMapWriter(t, "pinbot-system")
	const repo, img, held = "acme/manifests", "r.example/web", "sha256:0bad0bad0bad"
	before := New(admin, "pinbot-system")
	if err := before.Update(ctx, repo, func(l *release.Ledger) error {
		l.Log(time.Now(), "prod", img, release.ReasonMerged, "v1")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	unheld := rawLedger(t, admin)
	if err := before.Update(ctx, repo, func(l *release.Ledger) error {
		l.Holds = append(l.Holds, release.Hold{Env: "prod", Image: img, Digest: held, Reason: "crash loop", Since: time.Now()})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := mallory.CoreV1().Secrets("pinbot-system").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: MarksSecret}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("mallory writes the marks: %v; the test needs her not to", err)
	}

	// Every replica is gone; mallory puts the unheld version back.
	cm := rawLedger(t, mallory)
	cm.Data = unheld.Data
	if _, err := mallory.CoreV1().ConfigMaps("pinbot-system").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	started := New(admin, "pinbot-system")
	var te *TamperedError
	if _, _, err := started.Get(ctx, repo); !errors.As(err, &te) || te.Restorable || !strings.Contains(err.Error(), "the newest pinbot wrote") {
		t.Errorf("a replica started after the replay reads %v; want an unrestorable TamperedError naming the newest version", err)
	}
	gate := func(l *Ledgers) error {
		return Gate{Ledgers: l, Repo: repo}.Admit(ctx, release.Admission{Env: "prod", Image: img, Digest: held, Force: true})
	}
	if err := gate(New(admin, "pinbot-system")); !errors.Is(err, ErrTampered) {
		t.Errorf("after the replay the gate says %v; want ErrTampered", err)
	}

	// Or she deletes it.
	if err := mallory.CoreV1().ConfigMaps("pinbot-system").Delete(ctx, Name(repo), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := gate(New(admin, "pinbot-system")); !errors.Is(err, ErrTampered) || !strings.Contains(err.Error(), "deleted") {
		t.Errorf("after the deletion the gate says %v; want ErrTampered saying it was deleted", err)
	}

	// Someone who may read the key accepts the deletion: the ledger
	// starts over, empty, and says who started it.
	if err := New(admin, "pinbot-system").Reseal(ctx, repo, "admin", "the repository starts over", time.Now()); err != nil {
		t.Fatal(err)
	}
	l, _, err := New(admin, "pinbot-system").Get(ctx, repo)
	if err != nil || len(l.Holds) != 0 || countReason(l, release.ReasonLedgerResealed) != 1 {
		t.Fatalf("after accepting the deletion a new replica reads %v (%+v); want an empty ledger noting the reseal", err, l)
	}
	if err := gate(New(admin, "pinbot-system")); err != nil {
		t.Errorf("the gate on the started-over ledger says %v; want no refusal", err)
	}
}

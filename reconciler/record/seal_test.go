package record

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/status"
)

// TestAConfigMapWriterCannotEditARecord: on a real API server, mallory
// may write every ConfigMap in the state namespace but read no Secret.
// A record an older pinbot left unsealed is sealed, as it stands, when
// the key is made. Then her edits (a forged proof, a stripped seal) are
// refused to readers as ErrTampered, and the writer of the app's record
// writes back the version it last wrote, or, when it never read one, an
// empty record (the app is then applied and proven again). Before, her
// edit read as pinbot's own: the page said the app was proven.
func TestAConfigMapWriterCannotEditARecord(t *testing.T) {
	ctx := context.Background()
	c, admin, ns := plane.Namespace(t)
	mallory, err := c.ConfigMapWriter(ctx, ns, "mallory")
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app.kubernetes.io/managed-by": "pinbot", "pinbot.dev/history-of": "old"}
	if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: configMapName("old"), Labels: labels},
		Data:       map[string]string{statusKey: `{"app":"old","verified":true}`},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	writer := New(admin, ns)
	if rec, err := writer.Get(ctx, "old"); err != nil || rec.Status == nil || !rec.Status.Verified {
		t.Fatalf("the record an older pinbot wrote: %+v, %v; want it read as it stood", rec, err)
	}
	if err := writer.Update(ctx, "web", func(r *history.Record) bool {
		r.Status = &status.App{App: "web", Verified: false, HealthReason: "rolling out"}
		return true
	}); err != nil {
		t.Fatal(err)
	}

	forge := func(edit func(data map[string]string)) {
		t.Helper()
		cm, err := mallory.CoreV1().ConfigMaps(ns).Get(ctx, configMapName("web"), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		edit(cm.Data)
		if _, err := mallory.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	proven := func(data map[string]string) {
		data[statusKey] = strings.Replace(data[statusKey], `"verified":false`, `"verified":true`, 1)
	}
	for _, tc := range []struct {
		name string
		edit func(map[string]string)
	}{
		{"a forged proof", proven},
		{"a forged proof, its seal stripped", func(data map[string]string) { proven(data); delete(data, sealKey) }},
	} {
		forge(tc.edit)
		if _, err := New(admin, ns).Get(ctx, "web"); !errors.Is(err, ErrTampered) {
			t.Errorf("%s: a reader gets %v; want ErrTampered", tc.name, err)
		}
		txn, err := writer.Begin(ctx, "web")
		if err != nil {
			t.Fatal(err)
		}
		if s := txn.Current().Status; s == nil || s.Verified {
			t.Errorf("%s: the writer starts its pass from %+v; want its own last version, unproven", tc.name, s)
		}
		if err := txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		rec, err := New(admin, ns).Get(ctx, "web")
		if err != nil || rec.Status == nil || rec.Status.Verified || rec.Status.HealthReason != "rolling out" {
			t.Errorf("%s: after the writer's pass a reader gets %+v, %v; want pinbot's version back", tc.name, rec, err)
		}
	}

	// A writer that never read the record starts over.
	forge(proven)
	fresh := New(admin, ns)
	txn, err := fresh.Begin(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	if s := txn.Current().Status; s != nil {
		t.Errorf("a new writer starts from %+v; want an empty record", s)
	}
	if err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if rec, err := New(admin, ns).Get(ctx, "web"); err != nil || rec.Status != nil {
		t.Errorf("after the new writer's pass: %+v, %v; want an empty, sealed record", rec, err)
	}
}

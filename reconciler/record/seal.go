package record

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/reconciler/history"
)

// The record's seal. Whoever may write ConfigMaps in the state namespace
// could otherwise make pinbot say an app was proven, or that it already
// applied what Git pins (so it applies nothing), by editing its record.
// So every record carries a seal, an HMAC-SHA256 under the key in the
// Secret KeySecret, over the app and the record. A record whose seal does
// not match, or that carries none, is trusted for nothing: a reader gets
// ErrTampered, and the process that writes the app's record writes back
// the version it last read or wrote (none: an empty record, so the app is
// applied and proven again), logging a warning.
const (
	// KeySecret is the Secret in the state namespace whose "key" seals
	// the records. The first History that needs it and finds none makes
	// it, and seals the records an older pinbot left unsealed.
	KeySecret = "pinbot-records-key"
	sealKey   = "record.seal"
)

// ErrTampered means an app's record was changed outside pinbot.
var ErrTampered = errors.New("changed outside pinbot")

// sealOf is the seal of app's record data.
func sealOf(key []byte, app string, data map[string]string) string {
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "pinbot.dev/app-record v1\n%s\n%d\n%s\n%s", app, len(data[historyKey]), data[historyKey], data[statusKey])
	return hex.EncodeToString(mac.Sum(nil))
}

// seal adds the seal of app's record to data.
func (h *History) seal(ctx context.Context, app string, data map[string]string) error {
	key, err := h.key.Get(ctx)
	if err != nil {
		return err
	}
	data[sealKey] = sealOf(key, app, data)
	return nil
}

// open decodes app's record from cm once its seal checks out.
func (h *History) open(ctx context.Context, app string, cm *corev1.ConfigMap) (*history.Record, error) {
	if err := h.check(ctx, app, cm); err != nil {
		return nil, err
	}
	return decodeRecord(cm)
}

// check checks the seal of app's record in cm.
func (h *History) check(ctx context.Context, app string, cm *corev1.ConfigMap) error {
	key, err := h.key.Get(ctx)
	if err != nil {
		return fmt.Errorf("reading the record of %s: %w", app, err)
	}
	if !hmac.Equal([]byte(cm.Data[sealKey]), []byte(sealOf(key, app, cm.Data))) {
		return fmt.Errorf("the record of %s (ConfigMap %s/%s) was %w: pinbot writes it back at the app's next pass", app, h.namespace, cm.Name, ErrTampered)
	}
	return nil
}

// trusted opens app's record from cm as the writer of the app's record
// does: a record changed outside pinbot gives way to the version this
// History last read or wrote, or an empty one; restore then says it must
// be written back.
func (h *History) trusted(ctx context.Context, app string, cm *corev1.ConfigMap) (rec *history.Record, restore bool, err error) {
	rec, err = h.open(ctx, app, cm)
	if !errors.Is(err, ErrTampered) {
		return rec, false, err
	}
	logctx.From(ctx).Warn("an app's record was changed outside pinbot: writing back its last version", "app", app, "configMap", h.namespace+"/"+cm.Name)
	h.mu.Lock()
	c, ok := h.cached[app]
	h.mu.Unlock()
	if ok && c.cm != nil { // read or written by this History: trusted
		if rec, err := decodeRecord(c.cm); err == nil {
			return rec, true, nil
		}
	}
	return &history.Record{}, true, nil
}

// sealUnsealed seals the records an older pinbot left without a seal,
// when the key is new (sealkey.New).
func (h *History) sealUnsealed(ctx context.Context, key []byte) error {
	list, err := h.client.CoreV1().ConfigMaps(h.namespace).List(ctx, metav1.ListOptions{LabelSelector: recordsSelector})
	if err != nil {
		return fmt.Errorf("listing the records to seal: %w", err)
	}
	for i := range list.Items {
		cm := &list.Items[i]
		app := cm.Labels[historyOfLabel]
		if app == "" || cm.Name != configMapName(app) || cm.Data[sealKey] != "" {
			continue
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[sealKey] = sealOf(key, app, cm.Data)
		if _, err := h.client.CoreV1().ConfigMaps(h.namespace).Update(ctx, cm, metav1.UpdateOptions{FieldManager: "pinbot"}); err != nil {
			return fmt.Errorf("sealing the record of %s (ConfigMap %s/%s): %w", app, h.namespace, cm.Name, err)
		}
	}
	return nil
}

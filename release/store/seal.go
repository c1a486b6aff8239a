package store

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/release"
)

// The ledger's seal. A ConfigMap is not a vault: whoever may write
// ConfigMaps in the state namespace could lift a hold or forge a proof by
// editing a ledger. So every ledger carries a seal, an HMAC-SHA256 under
// a key kept in the Secret KeySecret, over the repository, a sequence
// number and the ledger. A ledger whose seal does not match, or that
// carries none, is trusted for nothing (ErrTampered) until pinbot puts
// back the version it last saw (Restore) or someone who may read the key
// accepts it as it stands (Reseal). Writing a ledger needs the key too,
// so the right to lift a hold by hand is the right to read that Secret.
//
// A Ledgers that read or wrote a version also refuses an older, correctly
// sealed one put back (a replay) and the ledger's deletion; one that
// starts after such a replay or deletion sees it by the ledger's mark
// (marks.go).
const (
	// KeySecret is the Secret in the state namespace whose "key" seals
	// the ledgers. The first Ledgers that needs it and finds none makes
	// it, and seals the ledgers an older pinbot left unsealed.
	KeySecret = "pinbot-ledger-key"
	sealField = "ledger.seal"
	seqField  = "ledger.seq"
)

// ErrTampered means a ledger was changed outside pinbot: it is not
// trusted (see TamperedError).
var ErrTampered = errors.New("the ledger was changed outside pinbot")

// TamperedError says which ledger was changed outside pinbot, and how.
type TamperedError struct {
	Repo string
	// ConfigMap is the ledger's namespace/name.
	ConfigMap string
	// Why says what gave it away, in a few words.
	Why string
	// Restorable says whether this Ledgers can write back the version
	// it last read or wrote (Restore).
	Restorable bool
	// older: a correctly sealed version older than one this Ledgers saw,
	// which a read that raced its own write also returns (Get reads again).
	older bool
}

func (e *TamperedError) Error() string {
	return fmt.Sprintf("the ledger of %s (ConfigMap %s) was changed outside pinbot: %s; nothing in it is trusted until pinbot restores it, or someone who may read Secret %s checks it and runs pinbot ledger reseal --repo %s --reason TEXT",
		e.Repo, e.ConfigMap, e.Why, KeySecret, e.Repo)
}

func (e *TamperedError) Unwrap() error { return ErrTampered }

// sealed is a ledger as last read or written, sealed: what Restore
// writes back, and the sequence number below which a version is a replay.
type sealed struct {
	seq  uint64
	data string
}

// sealOf is the seal of data as repository's ledger number seq.
func sealOf(key []byte, repository string, seq uint64, data string) string {
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "pinbot.dev/ledger v1\n%s\n%d\n", strings.ToLower(repository), seq)
	mac.Write([]byte(data))
	return hex.EncodeToString(mac.Sum(nil))
}

// sealKey is the key that seals the ledgers (KeySecret).
func (s *Ledgers) sealKey(ctx context.Context) ([]byte, error) { return s.key.Get(ctx) }

// sealUnsealed seals the ledgers an older pinbot left without a seal,
// when the key is new (sealkey.New).
func (s *Ledgers) sealUnsealed(ctx context.Context, key []byte) error {
	list, err := s.client.CoreV1().ConfigMaps(s.namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelRepository + "=true"})
	if err != nil {
		return fmt.Errorf("listing the ledgers to seal: %w", err)
	}
	for i := range list.Items {
		cm := &list.Items[i]
		repo := cm.Annotations[annotationRepository]
		if repo == "" || cm.Data[sealField] != "" {
			continue
		}
		cm.Data[seqField] = "1"
		cm.Data[sealField] = sealOf(key, repo, 1, cm.Data[ledgerKey])
		if _, err := s.client.CoreV1().ConfigMaps(s.namespace).Update(ctx, cm, metav1.UpdateOptions{FieldManager: "pinbot"}); err != nil {
			return fmt.Errorf("sealing the ledger of %s (ConfigMap %s/%s): %w", repo, s.namespace, cm.Name, err)
		}
	}
	return nil
}

// verify checks cm's seal as repository's ledger, and that it is not
// older than the version this Ledgers last saw; it returns its sequence
// number.
func (s *Ledgers) verify(ctx context.Context, repository string, cm *corev1.ConfigMap) (uint64, error) {
	key, err := s.sealKey(ctx)
	if err != nil {
		return 0, err
	}
	data := cm.Data[ledgerKey]
	seal, ok := cm.Data[sealField]
	if !ok {
		return 0, s.tampered(repository, cm.Name, "it carries no seal")
	}
	seq, err := strconv.ParseUint(cm.Data[seqField], 10, 64)
	if err != nil {
		return 0, s.tampered(repository, cm.Name, "its sequence number is not a number")
	}
	if !hmac.Equal([]byte(seal), []byte(sealOf(key, repository, seq, data))) {
		return 0, s.tampered(repository, cm.Name, "its seal does not match its content")
	}
	s.mu.Lock()
	last, ok := s.seen[strings.ToLower(repository)]
	s.mu.Unlock()
	if ok && (seq < last.seq || seq == last.seq && data != last.data) {
		err := s.tampered(repository, cm.Name, fmt.Sprintf("an older version (number %d) was put back over number %d", seq, last.seq))
		err.older = seq < last.seq
		return 0, err
	}
	if !ok {
		mark, err := s.mark(ctx, repository)
		if err != nil {
			return 0, err
		}
		if seq < mark {
			// Or a read that raced another replica's write and its mark.
			err := s.tampered(repository, cm.Name, fmt.Sprintf("an older version (number %d) was put back over number %d, the newest pinbot wrote", seq, mark))
			err.older = true
			return 0, err
		}
	}
	s.saw(repository, seq, data)
	return seq, nil
}

// saw records data as the newest version of repository's ledger this
// Ledgers read or wrote.
func (s *Ledgers) saw(repository string, seq uint64, data string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen[strings.ToLower(repository)] = sealed{seq: seq, data: data}
}

func (s *Ledgers) tampered(repository, name, why string) *TamperedError {
	s.mu.Lock()
	_, restorable := s.seen[strings.ToLower(repository)]
	s.mu.Unlock()
	return &TamperedError{Repo: repository, ConfigMap: s.namespace + "/" + name, Why: why, Restorable: restorable}
}

// Restore writes back the version of repository's ledger this Ledgers
// last read or wrote, over whatever stands there now, noting in it that
// it was changed outside pinbot and why that showed.
func (s *Ledgers) Restore(ctx context.Context, repository, why string, now time.Time) error {
	s.mu.Lock()
	last, ok := s.seen[strings.ToLower(repository)]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("restoring the ledger of %s: this replica never read it sealed", repository)
	}
	l, err := release.Parse([]byte(last.data))
	if err != nil {
		return err
	}
	l.Log(now, "", "", release.ReasonLedgerRestored,
		fmt.Sprintf("the ledger was changed outside pinbot (%s); pinbot wrote back version %d, as it last read or wrote it", why, last.seq))
	v, err := s.current(ctx, repository)
	if err != nil {
		return err
	}
	// Past what another replica may have written since this one read.
	mark, err := s.mark(ctx, repository)
	if err != nil {
		return err
	}
	v.seq = max(last.seq, mark)
	_, err = s.Put(ctx, repository, l, v)
	return err
}

// Reseal accepts repository's ledger as it stands now, after it was
// changed outside pinbot, noting who accepted it and why. It needs the
// key, as every write does.
func (s *Ledgers) Reseal(ctx context.Context, repository, who, why string, now time.Time) error {
	cm, err := s.client.CoreV1().ConfigMaps(s.namespace).Get(ctx, Name(repository), metav1.GetOptions{})
	var l *release.Ledger
	what := "accepted as it stood after a change outside pinbot"
	switch {
	case apierrors.IsNotFound(err):
		// Deleted: accepting that starts the ledger over, empty.
		cm, l, what = &corev1.ConfigMap{}, release.New(), "started over after its ConfigMap was deleted"
	case err != nil:
		return fmt.Errorf("reading the ledger of %s (ConfigMap %s/%s): %w", repository, s.namespace, Name(repository), err)
	default:
		if l, err = release.Parse([]byte(cm.Data[ledgerKey])); err != nil {
			return fmt.Errorf("ConfigMap %s/%s: %w: fix or delete it", s.namespace, cm.Name, err)
		}
	}
	l.LogBy(now, "", "", release.ReasonLedgerResealed, what+", by "+who+": "+why, who, why)
	// Past every number a replica may have seen, and past the one it
	// carries, though no seal vouches for that.
	seq := uint64(now.UnixNano())
	if n, err := strconv.ParseUint(cm.Data[seqField], 10, 64); err == nil && n >= seq && n < 1<<62 {
		seq = n + 1
	}
	_, err = s.Put(ctx, repository, l, Version{rv: cm.ResourceVersion, exists: cm.ResourceVersion != "", seq: seq - 1})
	return err
}

// current is the version of repository's ledger ConfigMap as it stands,
// sealed or not, for a write over it.
func (s *Ledgers) current(ctx context.Context, repository string) (Version, error) {
	cm, err := s.client.CoreV1().ConfigMaps(s.namespace).Get(ctx, Name(repository), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return Version{}, nil
	case err != nil:
		return Version{}, fmt.Errorf("reading the ledger of %s (ConfigMap %s/%s): %w", repository, s.namespace, Name(repository), err)
	}
	return Version{rv: cm.ResourceVersion, exists: true}, nil
}

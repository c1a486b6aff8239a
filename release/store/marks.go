package store

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The ledgers' marks. A replica remembers the newest version of each
// ledger it read or wrote, so it refuses an older sealed version put back
// and a deletion; but a replica that starts after such a replay, while
// none ran, remembers nothing. So the newest sequence number pinbot wrote
// for each ledger is also kept where a ConfigMap writer cannot reach: the
// Secret MarksSecret, one entry per ledger ConfigMap. A replica reads a
// ledger's mark the first time it reads the ledger; a version older than
// the mark, or no ledger where the mark says pinbot wrote one, is
// ErrTampered.
//
// The mark is raised after the ledger is written, so it is never ahead of
// the ledger, only behind it for a moment. A writer that may not write the
// Secret (a person's CLI) leaves it where it was, which only makes it
// laxer until serve writes next.
const MarksSecret = "pinbot-ledger-marks"

// mark is the newest sequence number pinbot wrote for repository's
// ledger, 0 when it wrote none or the caller may not read the marks.
func (s *Ledgers) mark(ctx context.Context, repository string) (uint64, error) {
	secret, err := s.client.CoreV1().Secrets(s.namespace).Get(ctx, MarksSecret, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("reading the ledgers' marks (Secret %s/%s): %w", s.namespace, MarksSecret, err)
	}
	v, ok := secret.Data[Name(repository)]
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseUint(string(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("the ledgers' marks (Secret %s/%s): %s holds %q, not a number", s.namespace, MarksSecret, Name(repository), v)
	}
	return n, nil
}

// raise sets repository's mark to seq, unless it is there already. A
// caller that may not write the marks leaves them as they are.
func (s *Ledgers) raise(ctx context.Context, repository string, seq uint64) error {
	secrets := s.client.CoreV1().Secrets(s.namespace)
	key, value := Name(repository), []byte(strconv.FormatUint(seq, 10))
	for range 5 {
		secret, err := secrets.Get(ctx, MarksSecret, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = secrets.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: MarksSecret, Labels: map[string]string{"app.kubernetes.io/name": "pinbot"}},
				Data:       map[string][]byte{key: value},
			}, metav1.CreateOptions{FieldManager: "pinbot"})
		} else if err == nil {
			if n, perr := strconv.ParseUint(string(secret.Data[key]), 10, 64); perr == nil && n >= seq {
				return nil
			}
			if secret.Data == nil {
				secret.Data = map[string][]byte{}
			}
			secret.Data[key] = value
			_, err = secrets.Update(ctx, secret, metav1.UpdateOptions{FieldManager: "pinbot"})
		}
		switch {
		case err == nil || apierrors.IsForbidden(err):
			return nil
		case !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err):
			return fmt.Errorf("raising the mark of the ledger of %s (Secret %s/%s): %w", repository, s.namespace, MarksSecret, err)
		}
	}
	return fmt.Errorf("raising the mark of the ledger of %s (Secret %s/%s): %w, five times", repository, s.namespace, MarksSecret, ErrConflict)
}

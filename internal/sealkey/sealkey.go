// Package sealkey keeps the HMAC key that seals what pinbot writes in
// ConfigMaps of its state namespace, where a principal that may write
// ConfigMaps could otherwise change it: a key of 32 random bytes under
// "key" in a Secret, made by the first replica that needs it and finds
// none, and read once after that.
package sealkey

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Field is the Secret's field that holds the key.
const Field = "key"

// Key is the key in the Secret namespace/name.
type Key struct {
	client          kubernetes.Interface
	namespace, name string
	made            func(ctx context.Context, key []byte) error

	mu  sync.Mutex
	key []byte
}

// New returns the key in the Secret namespace/name. made, when not nil,
// runs once when this Key made the Secret, before the key is used: what
// was written before any key existed is sealed then, trusted as it
// stands once, when the key is new, and never again.
func New(client kubernetes.Interface, namespace, name string, made func(ctx context.Context, key []byte) error) *Key {
	return &Key{client: client, namespace: namespace, name: name, made: made}
}

// Get returns the key, read once from the Secret, which it makes when
// there is none (or reads the one another replica made first).
func (k *Key) Get(ctx context.Context) ([]byte, error) {
	k.mu.Lock()
	key := k.key
	k.mu.Unlock()
	if key != nil {
		return key, nil
	}
	secret, err := k.client.CoreV1().Secrets(k.namespace).Get(ctx, k.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		secret, err = k.make(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("the key in Secret %s/%s, which proves what pinbot wrote is pinbot's: %w", k.namespace, k.name, err)
	}
	key = secret.Data[Field]
	if len(key) < 32 {
		return nil, fmt.Errorf("the key in Secret %s/%s: %q holds %d bytes, want 32 or more", k.namespace, k.name, Field, len(key))
	}
	k.mu.Lock()
	k.key = key
	k.mu.Unlock()
	return key, nil
}

func (k *Key) make(ctx context.Context) (*corev1.Secret, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	secrets := k.client.CoreV1().Secrets(k.namespace)
	secret, err := secrets.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: k.name, Labels: map[string]string{"app.kubernetes.io/name": "pinbot"}},
		Data:       map[string][]byte{Field: key},
	}, metav1.CreateOptions{FieldManager: "pinbot"})
	if apierrors.IsAlreadyExists(err) {
		return secrets.Get(ctx, k.name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, err
	}
	if k.made != nil {
		if err := k.made(ctx, key); err != nil {
			return nil, err
		}
	}
	return secret, nil
}

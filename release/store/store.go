// Package store keeps the release ledger (package release) in the
// cluster: one ConfigMap "pinbot-ledger-<repository>" per manifest
// repository in pinbot's state namespace, so it survives a restart and a
// failover, and every replica's dashboard shows the same.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"pinbot.dev/pinbot/release"
)

const (
	ledgerKey = "ledger.json"
	// LabelRepository marks a ledger ConfigMap with its repository.
	LabelRepository = "pinbot.dev/ledger"
)

// ErrConflict means the ledger changed since it was read (a person
// released a hold, another replica wrote): read it again and redo.
var ErrConflict = errors.New("the ledger changed since it was read")

// Ledgers reads and writes ledgers in namespace.
type Ledgers struct {
	client    kubernetes.Interface
	namespace string
}

// New returns the ledgers of namespace.
func New(client kubernetes.Interface, namespace string) *Ledgers {
	return &Ledgers{client: client, namespace: namespace}
}

// Version names the ledger as read, for Put: its resource version, and
// whether it existed.
type Version struct {
	rv     string
	exists bool
}

// Name is the ConfigMap of repository owner/name.
func Name(repository string) string {
	return "pinbot-ledger-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-", ".", "-").Replace(repository))
}

// Get returns repository's ledger (empty when none was written yet) and
// its version.
func (s *Ledgers) Get(ctx context.Context, repository string) (*release.Ledger, Version, error) {
	cm, err := s.client.CoreV1().ConfigMaps(s.namespace).Get(ctx, Name(repository), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return release.New(), Version{}, nil
	}
	if err != nil {
		return nil, Version{}, fmt.Errorf("reading the ledger of %s (ConfigMap %s/%s): %w", repository, s.namespace, Name(repository), err)
	}
	l, err := release.Parse([]byte(cm.Data[ledgerKey]))
	if err != nil {
		return nil, Version{}, fmt.Errorf("ConfigMap %s/%s: %w", s.namespace, Name(repository), err)
	}
	return l, Version{rv: cm.ResourceVersion, exists: true}, nil
}

// Put writes repository's ledger over the version read; ErrConflict when
// it changed since.
func (s *Ledgers) Put(ctx context.Context, repository string, l *release.Ledger, v Version) (Version, error) {
	data, err := l.Marshal()
	if err != nil {
		return v, err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: Name(repository), Namespace: s.namespace, ResourceVersion: v.rv,
			Labels: map[string]string{LabelRepository: "true"}, Annotations: map[string]string{"pinbot.dev/repository": repository}},
		Data: map[string]string{ledgerKey: string(data)},
	}
	var out *corev1.ConfigMap
	if !v.exists {
		out, err = s.client.CoreV1().ConfigMaps(s.namespace).Create(ctx, cm, metav1.CreateOptions{FieldManager: "pinbot"})
	} else {
		out, err = s.client.CoreV1().ConfigMaps(s.namespace).Update(ctx, cm, metav1.UpdateOptions{FieldManager: "pinbot"})
	}
	switch {
	case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err):
		return v, fmt.Errorf("writing the ledger of %s: %w", repository, ErrConflict)
	case err != nil:
		return v, fmt.Errorf("writing the ledger of %s (ConfigMap %s/%s): %w", repository, s.namespace, Name(repository), err)
	}
	return Version{rv: out.ResourceVersion, exists: true}, nil
}

// Update reads repository's ledger, applies change and writes it,
// reading again when it changed meanwhile (up to five times).
func (s *Ledgers) Update(ctx context.Context, repository string, change func(*release.Ledger) error) error {
	for range 5 {
		l, v, err := s.Get(ctx, repository)
		if err != nil {
			return err
		}
		if err := change(l); err != nil {
			return err
		}
		if _, err = s.Put(ctx, repository, l, v); !errors.Is(err, ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("writing the ledger of %s: %w, five times", repository, ErrConflict)
}

// Repositories lists the repositories that have a ledger.
func (s *Ledgers) Repositories(ctx context.Context) ([]string, error) {
	list, err := s.client.CoreV1().ConfigMaps(s.namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelRepository + "=true"})
	if err != nil {
		return nil, fmt.Errorf("listing the ledgers in %s: %w", s.namespace, err)
	}
	var out []string
	for _, cm := range list.Items {
		if r := cm.Annotations["pinbot.dev/repository"]; r != "" {
			out = append(out, r)
		}
	}
	return out, nil
}

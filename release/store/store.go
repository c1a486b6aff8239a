// Package store keeps the release ledger (package release) in the
// cluster: one ConfigMap "pinbot-ledger-<repository>-<hash>" per manifest
// repository in pinbot's state namespace, so it survives a restart and a
// failover, and every replica's dashboard shows the same.
package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	listerscorev1 "k8s.io/client-go/listers/core/v1"

	"pinbot.dev/pinbot/internal/sealkey"
	"pinbot.dev/pinbot/release"
)

const (
	ledgerKey = "ledger.json"
	// LabelRepository marks a ledger ConfigMap with its repository.
	LabelRepository = "pinbot.dev/ledger"
	// annotationRepository holds the repository's exact name.
	annotationRepository = "pinbot.dev/repository"
)

// ErrConflict means the ledger changed since it was read (a person
// released a hold, another replica wrote): read it again and redo.
var ErrConflict = errors.New("the ledger changed since it was read")

// Ledgers reads and writes ledgers in namespace.
type Ledgers struct {
	client    kubernetes.Interface
	namespace string

	// key seals the ledgers (seal.go).
	key *sealkey.Key

	mu sync.Mutex
	// seen is each ledger as last read or written, by lower-cased
	// repository.
	seen map[string]sealed
	// lister reads the ledgers' ConfigMaps from Watch's cache while it
	// runs; reads are the ledgers Read parsed from it (watch.go).
	lister listerscorev1.ConfigMapLister
	reads  map[string]read
}

// New returns the ledgers of namespace.
func New(client kubernetes.Interface, namespace string) *Ledgers {
	s := &Ledgers{client: client, namespace: namespace, seen: map[string]sealed{}, reads: map[string]read{}}
	s.key = sealkey.New(client, namespace, KeySecret, s.sealUnsealed)
	return s
}

// Version names the ledger as read, for Put: its resource version, and
// whether it existed.
type Version struct {
	rv     string
	exists bool
	// legacy is the ConfigMap of an older pinbot it was read from, to
	// remove once the ledger is written under Name.
	legacy string
	// data is the ledger as read.
	data string
	// seq is its sequence number; the next write is seq+1.
	seq uint64
}

// Changed reports whether l differs from the ledger v was read with:
// writing an unchanged ledger costs an API request and tells no one
// anything, unless the write is to fence what follows.
func (v Version) Changed(l *release.Ledger) bool {
	data, err := l.Marshal()
	return err != nil || !v.exists || v.legacy != "" || string(data) != v.data
}

// Name is the ConfigMap of repository owner/name: a readable slug and a
// hash of the whole name (case aside, as Gitea's names are), so that
// acme/web-app, acme-web/app, acme/web_app and acme/web.app never share
// one ledger, holds included.
func Name(repository string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(repository)))
	slug := legacyName(repository)
	if len(slug) > 200 {
		slug = slug[:200]
	}
	return strings.TrimRight(slug, "-.") + "-" + hex.EncodeToString(sum[:5])
}

// legacyName is the ConfigMap name of older pinbots, which several
// repositories could share: read only when its annotation names the
// repository itself.
func legacyName(repository string) string {
	return "pinbot-ledger-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-", ".", "-").Replace(repository))
}

// Get returns repository's ledger (empty when none was written yet) and
// its version.
func (s *Ledgers) Get(ctx context.Context, repository string) (*release.Ledger, Version, error) {
	// The key first: when it is new, it seals what an older pinbot left.
	_, err := s.sealKey(ctx)
	if err != nil {
		return nil, Version{}, err
	}
	var cm *corev1.ConfigMap
	var seq uint64
	for range 2 {
		cm, err = s.client.CoreV1().ConfigMaps(s.namespace).Get(ctx, Name(repository), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return s.getLegacy(ctx, repository)
		}
		if err != nil {
			return nil, Version{}, fmt.Errorf("reading the ledger of %s (ConfigMap %s/%s): %w", repository, s.namespace, Name(repository), err)
		}
		// An older version may be this store's own, read while it wrote
		// a newer one: a version put back is there when read again.
		var te *TamperedError
		if seq, err = s.verify(ctx, repository, cm); !errors.As(err, &te) || !te.older {
			break
		}
	}
	if err != nil {
		return nil, Version{}, err
	}
	l, err := release.Parse([]byte(cm.Data[ledgerKey]))
	if err != nil {
		return nil, Version{}, fmt.Errorf("ConfigMap %s/%s: %w", s.namespace, Name(repository), err)
	}
	return l, Version{rv: cm.ResourceVersion, exists: true, data: cm.Data[ledgerKey], seq: seq}, nil
}

// getLegacy reads repository's ledger from its older name, when the
// ConfigMap there is the repository's own; else an empty ledger.
func (s *Ledgers) getLegacy(ctx context.Context, repository string) (*release.Ledger, Version, error) {
	old := legacyName(repository)
	cm, err := s.client.CoreV1().ConfigMaps(s.namespace).Get(ctx, old, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || err == nil && cm.Annotations[annotationRepository] != repository: // none, or another repository's
		return s.none(ctx, repository)
	case err != nil:
		return nil, Version{}, fmt.Errorf("reading the ledger of %s (ConfigMap %s/%s): %w", repository, s.namespace, old, err)
	}
	seq, err := s.verify(ctx, repository, cm)
	if err != nil {
		return nil, Version{}, err
	}
	l, err := release.Parse([]byte(cm.Data[ledgerKey]))
	if err != nil {
		return nil, Version{}, fmt.Errorf("ConfigMap %s/%s: %w", s.namespace, old, err)
	}
	return l, Version{legacy: old, seq: seq}, nil
}

// none is repository's ledger when its ConfigMap is not there: empty,
// unless this Ledgers read or wrote it before, when it was deleted.
func (s *Ledgers) none(ctx context.Context, repository string) (*release.Ledger, Version, error) {
	s.mu.Lock()
	_, seen := s.seen[strings.ToLower(repository)]
	s.mu.Unlock()
	if seen {
		return nil, Version{}, s.tampered(repository, Name(repository), "its ConfigMap was deleted")
	}
	mark, err := s.mark(ctx, repository)
	if err != nil {
		return nil, Version{}, err
	}
	if mark > 0 {
		return nil, Version{}, s.tampered(repository, Name(repository), fmt.Sprintf("its ConfigMap was deleted (pinbot had written version %d)", mark))
	}
	return release.New(), Version{}, nil
}

// Put writes repository's ledger over the version read; ErrConflict when
// it changed since.
func (s *Ledgers) Put(ctx context.Context, repository string, l *release.Ledger, v Version) (Version, error) {
	data, err := l.Marshal()
	if err != nil {
		return v, err
	}
	key, err := s.sealKey(ctx)
	if err != nil {
		return v, fmt.Errorf("writing the ledger of %s: %w", repository, err)
	}
	seq := v.seq + 1
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: Name(repository), Namespace: s.namespace, ResourceVersion: v.rv,
			Labels: map[string]string{LabelRepository: "true"}, Annotations: map[string]string{annotationRepository: repository}},
		Data: map[string]string{ledgerKey: string(data), seqField: strconv.FormatUint(seq, 10), sealField: sealOf(key, repository, seq, string(data))},
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
	s.saw(repository, seq, string(data))
	written := Version{rv: out.ResourceVersion, exists: true, data: string(data), seq: seq}
	if err := s.raise(ctx, repository, seq); err != nil {
		return written, err
	}
	if v.legacy != "" {
		err := s.client.CoreV1().ConfigMaps(s.namespace).Delete(ctx, v.legacy, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return written, fmt.Errorf("removing the ledger's old ConfigMap %s/%s: %w", s.namespace, v.legacy, err)
		}
	}
	return written, nil
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
		if r := cm.Annotations[annotationRepository]; r != "" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out, nil
}

// Gate is the release chain's gate read straight from the ledger of
// Repo: serve's own promotions and a CLI with a kubeconfig ask it, as
// others ask serve's gate endpoint. It implements promote.Admitter.
type Gate struct {
	Ledgers *Ledgers
	Repo    string
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// ErrNoLedger means the gate found no ledger of the repository where it
// looked: it fails closed, since an empty ledger would hold nothing.
var ErrNoLedger = errors.New("no ledger found")

// Admit returns nil or the *release.Refusal of a (release.Admit). A
// ledger that is not there refuses (ErrNoLedger): a kubeconfig of another
// cluster, or --ledger-namespace off by one, must not admit a held digest.
// serve writes the ledger at its first step of the repository.
func (g Gate) Admit(ctx context.Context, a release.Admission) error {
	l, v, err := g.Ledgers.Get(ctx, g.Repo)
	if err != nil {
		return err
	}
	if !v.exists && v.legacy == "" {
		return fmt.Errorf("the release chain's gate of %s: %w in namespace %s (ConfigMap %s): is this the cluster pinbot serve runs in, and --ledger-namespace its namespace? serve writes the ledger at its first look at the repository",
			g.Repo, ErrNoLedger, g.Ledgers.namespace, Name(g.Repo))
	}
	now := time.Now
	if g.Now != nil {
		now = g.Now
	}
	return release.Admit(a, release.FactsFrom(l, a, now()))
}

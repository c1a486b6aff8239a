package promote

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// State remembers when drift first saw each digest behind each tag, which
// is how the stabilisation window is measured. It lives in memory and,
// when it has a path, in a small JSON file between runs. It is safe for
// concurrent use.
type State struct {
	path string
	mu   sync.Mutex
	seen map[string]time.Time
}

type stateFile struct {
	Version int                  `json:"v"`
	Seen    map[string]time.Time `json:"seen"`
}

// NewState returns an empty in-memory State.
func NewState() *State { return &State{seen: map[string]time.Time{}} }

// LoadState reads the State kept at path; a missing file is an empty State
// that Save creates.
func LoadState(path string) (*State, error) {
	s := NewState()
	s.path = path
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading drift state: %w", err)
	}
	var f stateFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("reading drift state %s: %w", path, err)
	}
	if f.Seen != nil {
		s.seen = f.Seen
	}
	return s, nil
}

func stateKey(image, tag, digest string) string { return image + ":" + tag + "@" + digest }

// FirstSeen returns when digest was first seen behind image:tag, recording
// now if it is new.
func (s *State) FirstSeen(image, tag, digest string, now time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := stateKey(image, tag, digest)
	if t, ok := s.seen[k]; ok {
		return t
	}
	s.seen[k] = now
	return now
}

// Keep forgets every entry whose key keep does not report, so the State
// holds only digests tags point at now.
func (s *State) Keep(keep func(image, tag, digest string) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.seen {
		rest, digest, _ := strings.Cut(k, "@")
		i := strings.LastIndex(rest, ":")
		if i < strings.LastIndex(rest, "/") || !keep(rest[:i], rest[i+1:], digest) {
			delete(s.seen, k)
		}
	}
}

// Save writes the State to its path (atomically); without a path it does
// nothing.
func (s *State) Save() error {
	if s.path == "" {
		return nil
	}
	s.mu.Lock()
	raw, err := json.MarshalIndent(stateFile{Version: 1, Seen: s.seen}, "", "  ")
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("writing drift state: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".pinbot-state-*")
	if err != nil {
		return fmt.Errorf("writing drift state: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(raw, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("writing drift state %s: %w", s.path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing drift state %s: %w", s.path, err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return fmt.Errorf("writing drift state %s: %w", s.path, err)
	}
	return nil
}

// ageOf measures how long digest has been behind image:tag, for the
// stabilisation window. With a State it is the time since drift first saw
// the digest there (recorded now when new). Without one it falls back to
// the image's created time, which the build sets (and reproducible builds
// set to the epoch or the commit time); a zero or future created time
// gives known = false.
func ageOf(state *State, image, tag, digest string, created, now time.Time) (age time.Duration, known bool) {
	if state != nil {
		return now.Sub(state.FirstSeen(image, tag, digest, now)), true
	}
	if created.IsZero() || created.After(now) || created.Year() < 2000 {
		return 0, false
	}
	return now.Sub(created), true
}

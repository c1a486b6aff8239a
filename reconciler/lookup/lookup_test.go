package lookup

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/reconciler/verdict"
	"pinbot.dev/pinbot/registry"
)

// countingRegistry answers Candidates with err, counting the calls; a
// call blocks until release is closed, when it is not nil.
type countingRegistry struct {
	Registry // the signature methods, unused
	err      error
	release  chan struct{}
	calls    atomic.Int64
}

func (r *countingRegistry) Candidates(ctx context.Context, ref string, p imageref.Platform, configs bool) (registry.Candidates, error) {
	r.calls.Add(1)
	if r.release != nil {
		<-r.release
	}
	if r.err != nil {
		return registry.Candidates{}, r.err
	}
	return registry.Candidates{Index: true, Children: []registry.Child{{Digest: "sha256:" + fmt.Sprintf("%064d", 1)}}}, nil
}

var children = verdict.Lookup{Kind: verdict.LookupChildren, Ref: "registry.example/app@sha256:" + fmt.Sprintf("%064d", 0), Platform: imageref.Platform{OS: "linux", Architecture: "amd64"}}

func TestPassesAskingAtOnceShareOneRead(t *testing.T) {
	reg := &countingRegistry{release: make(chan struct{})}
	c := New(reg)
	const passes = 50
	var wg sync.WaitGroup
	answers := make([]verdict.Answer, passes)
	for i := range passes {
		wg.Go(func() { answers[i] = c.Answers(t.Context(), []verdict.Lookup{children})[children] })
	}
	// Let the first caller in before the registry answers, so the
	// others find its read in flight (or, if late, its answer cached).
	for reg.calls.Load() == 0 {
		runtime.Gosched()
	}
	close(reg.release)
	wg.Wait()
	if n := reg.calls.Load(); n != 1 {
		t.Errorf("the registry was asked %d times by %d passes asking at once, want 1", n, passes)
	}
	for i, a := range answers {
		if !a.Index || len(a.Digests) != 1 {
			t.Fatalf("pass %d got %+v, want the index and its child", i, a)
		}
	}
}

func TestRefusalOverTheBoundsIsRemembered(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      error
		definite bool
	}{
		{"over the bounds", fmt.Errorf("manifest is 99000000 bytes: %w", registry.ErrTooLarge), true},
		{"not found", registry.ErrNotFound, true},
		{"unreachable", errors.New("dial tcp: connection refused"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := &countingRegistry{err: tc.err}
			c := New(reg)
			first := c.Answers(t.Context(), []verdict.Lookup{children})[children]
			again := c.Answers(t.Context(), []verdict.Lookup{children})[children]
			if first.Err != again.Err || first.Missing != again.Missing {
				t.Errorf("answers differ: %+v then %+v", first, again)
			}
			want := int64(2)
			if tc.definite {
				want = 1
			}
			if n := reg.calls.Load(); n != want {
				t.Errorf("two passes asked the registry %d times, want %d", n, want)
			}
		})
	}
}

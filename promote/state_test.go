package promote

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestAge(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		state     *State
		created   time.Time
		wantAge   time.Duration
		wantKnown bool
	}{
		{name: "created time", created: now.Add(-90 * time.Minute), wantAge: 90 * time.Minute, wantKnown: true},
		{name: "no created time", wantKnown: false},
		{name: "reproducible epoch", created: time.Unix(0, 0), wantKnown: false},
		{name: "future created time", created: now.Add(time.Hour), wantKnown: false},
		{name: "state wins over created", state: NewState(), created: now.Add(-48 * time.Hour), wantAge: 0, wantKnown: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			age, known := ageOf(tc.state, "r.example/app", "main", d1, tc.created, now)
			if age != tc.wantAge || known != tc.wantKnown {
				t.Errorf("Age = %s, %v; want %s, %v", age, known, tc.wantAge, tc.wantKnown)
			}
		})
	}
}

func TestStateRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	s, err := LoadState(path)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s.FirstSeen("r.example:5000/org/app", "main", d1, t0)
	s.FirstSeen("r.example:5000/org/app", "main", d2, t0.Add(time.Minute))
	s.FirstSeen("r.example/web", "v1.2", d3, t0)
	if got := s.FirstSeen("r.example:5000/org/app", "main", d1, t0.Add(time.Hour)); !got.Equal(t0) {
		t.Errorf("FirstSeen of a known digest = %s, want %s", got, t0)
	}
	s.Keep(func(image, tag, digest string) bool { return digest != d1 })
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	back, err := LoadState(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Time{
		"r.example:5000/org/app:main@" + d2: t0.Add(time.Minute),
		"r.example/web:v1.2@" + d3:          t0,
	}
	if diff := cmp.Diff(want, back.seen); diff != "" {
		t.Errorf("state after a round trip (-want +got):\n%s", diff)
	}
}

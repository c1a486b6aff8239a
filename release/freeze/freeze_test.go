package freeze

import (
	"testing"
	"time"
)

// TestUntil: a weekend freeze from Friday 18:00 in Berlin, for 62 hours,
// holds Friday evening until Monday 08:00 there, and not at its end.
func TestUntil(t *testing.T) {
	w := []Window{{Start: "0 18 * * 5", Duration: 62 * time.Hour, TimeZone: "Europe/Berlin"}}
	fri := time.Date(2026, 12, 4, 17, 30, 0, 0, time.UTC) // 18:30 in Berlin
	if until, ok := Until(w, fri); !ok || !until.Equal(time.Date(2026, 12, 7, 7, 0, 0, 0, time.UTC)) {
		t.Errorf("Friday evening: %v, %v; want frozen until Monday 08:00 Berlin", until, ok)
	}
	if _, ok := Until(w, fri.Add(-time.Hour)); ok {
		t.Error("before the window: frozen")
	}
	if _, ok := Until(w, time.Date(2026, 12, 7, 7, 0, 0, 0, time.UTC)); ok {
		t.Error("at the window's end: still frozen")
	}
}

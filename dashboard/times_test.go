package dashboard

import (
	"testing"
	"time"
)

func TestRelativeTimes(t *testing.T) {
	for _, tc := range []struct {
		ago  time.Duration
		want string
	}{
		{2 * time.Second, "just now"},
		{45 * time.Second, "45s ago"},
		{90 * time.Second, "1m 30s ago"},
		{12*time.Minute + 20*time.Second, "12m ago"},
		{3*time.Hour + 5*time.Minute, "3h 5m ago"},
		{52 * time.Hour, "2d 4h ago"},
		{-3 * time.Minute, "in 3m"},
	} {
		got := at(now.Add(-tc.ago), now)
		if got.Rel != tc.want || got.Abs != now.Add(-tc.ago).UTC().Format(time.RFC3339) {
			t.Errorf("%s ago: %+v, want %q", tc.ago, got, tc.want)
		}
	}
	if z := at(time.Time{}, now); z != (Time{}) {
		t.Errorf("the zero time: %+v, want none", z)
	}
}

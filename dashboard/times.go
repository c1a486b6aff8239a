package dashboard

import (
	"fmt"
	"time"
)

// Time is a moment as the pages show it: relative to when the page was
// built ("12m ago"), the absolute time (RFC 3339, UTC) on hover and in
// the datetime attribute. The zero Time shows as "-".
type Time struct{ Abs, Rel string }

// at is t as seen at now.
func at(t, now time.Time) Time {
	if t.IsZero() {
		return Time{}
	}
	d := now.Sub(t)
	rel := span(d) + " ago"
	switch {
	case d < 0:
		rel = "in " + span(-d)
	case d < 5*time.Second:
		rel = "just now"
	}
	return Time{Abs: t.UTC().Format(time.RFC3339), Rel: rel}
}

// atPtr is at for an optional time.
func atPtr(t *time.Time, now time.Time) Time {
	if t == nil {
		return Time{}
	}
	return at(*t, now)
}

// span is d in its two largest units, as people read a duration on a
// wall: "45s", "12m", "3h 5m", "2d 4h".
func span(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		m, s := int(d/time.Minute), int(d%time.Minute/time.Second)
		if s == 0 || m >= 10 {
			return fmt.Sprintf("%dm", m)
		}
		return fmt.Sprintf("%dm %ds", m, s)
	case d < 24*time.Hour:
		h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
		if m == 0 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh %dm", h, m)
	}
	days, h := int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour)
	if h == 0 {
		return fmt.Sprintf("%dd", days)
	}
	return fmt.Sprintf("%dd %dh", days, h)
}

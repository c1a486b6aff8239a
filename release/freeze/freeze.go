// Package freeze is a release environment's change windows: from each
// time a cron schedule names, for a while, pinbot opens, updates and
// merges nothing there (and, when a window says so, rolls nothing back).
package freeze

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
)

// Window is a change window: from each time the cron schedule Start names
// (five fields, in TimeZone, default UTC), for Duration.
type Window struct {
	// Start is a cron schedule of five fields: when each window opens.
	Start string `yaml:"start" json:"start"`
	// Duration is how long each window lasts.
	Duration time.Duration `yaml:"duration" json:"duration"`
	// TimeZone is Start's, an IANA name such as Europe/Berlin. Default
	// UTC.
	TimeZone string `yaml:"timeZone" json:"timeZone,omitempty"`
	// HoldRollbacks makes the window hold rollbacks too. By default a
	// freeze holds onward promotions and merges, but a failed digest is
	// still rolled back: a freeze exists to keep production steady.
	HoldRollbacks bool `yaml:"holdRollbacks" json:"holdRollbacks,omitempty"`
}

// maxDuration bounds one window: a window of years would stop every
// change for years. Two weeks covers a year-end freeze.
const maxDuration = 14 * 24 * time.Hour

// Check says what is wrong with the window: a start that is no cron
// schedule, an unknown time zone, a duration not positive or over two
// weeks.
func (f Window) Check() error {
	_, _, err := f.schedule()
	return err
}

// schedule parses the window's start schedule and time zone.
func (f Window) schedule() (cron.Schedule, *time.Location, error) {
	loc := time.UTC
	if f.TimeZone != "" {
		l, err := time.LoadLocation(f.TimeZone)
		if err != nil {
			return nil, nil, fmt.Errorf("freeze time zone %q: %w", f.TimeZone, err)
		}
		loc = l
	}
	s, err := cron.ParseStandard(f.Start)
	if err != nil {
		return nil, nil, fmt.Errorf("freeze start %q: %w", f.Start, err)
	}
	if f.Duration <= 0 {
		return nil, nil, fmt.Errorf("freeze starting %q: want a positive duration", f.Start)
	}
	if f.Duration > maxDuration {
		return nil, nil, fmt.Errorf("freeze starting %q: duration %s is longer than pinbot's bound of %s", f.Start, f.Duration, maxDuration)
	}
	return s, loc, nil
}

// Until reports whether now is inside one of the windows, and when the
// last of the windows holding it ends.
func Until(windows []Window, now time.Time) (time.Time, bool) {
	return until(windows, now, false)
}

// RollbacksUntil is Until of the windows that hold rollbacks.
func RollbacksUntil(windows []Window, now time.Time) (time.Time, bool) {
	return until(windows, now, true)
}

func until(windows []Window, now time.Time, rollbacks bool) (time.Time, bool) {
	var until time.Time
	for _, f := range windows {
		if rollbacks && !f.HoldRollbacks {
			continue
		}
		s, loc, err := f.schedule()
		if err != nil {
			continue // Validate refused it
		}
		// A window holding now started after now-Duration: the first
		// start after that instant, if it is not after now.
		start := s.Next(now.Add(-f.Duration).In(loc).Add(-time.Second))
		if end := start.Add(f.Duration); !start.After(now) && end.After(now) && end.After(until) {
			until = end
		}
	}
	return until, !until.IsZero()
}

// Package poll is the tests' one way to wait for something: poll a
// condition with a deadline, never sleep to order events. Test support.
package poll

import (
	"testing"
	"time"
)

// Every is how often Until asks.
const Every = 50 * time.Millisecond

// Until asks cond every Every until it reports done, and fails tb when
// timeout passes first, naming what it waited for and the last state cond
// described. Deadlines are generous: a machine here may be loaded.
func Until(tb testing.TB, timeout time.Duration, what string, cond func() (done bool, state string)) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		done, state := cond()
		if done {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not after %s; last: %s", what, timeout, state)
		}
		time.Sleep(Every)
	}
}

// True is Until for a condition without a state to report.
func True(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	Until(tb, timeout, what, func() (bool, string) { return cond(), "false" })
}

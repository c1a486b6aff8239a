package chains

import (
	"fmt"
	"testing"
	"time"
)

func TestScheduleNewChainsAreDueAtOnce(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	s := NewSchedule(10 * time.Second)
	repos := []string{"acme/b", "acme/a"}
	var order []string
	for range 2 {
		repo, wait := s.Next(repos, t0)
		if repo == "" {
			t.Fatalf("nothing due at once, wait %s", wait)
		}
		order = append(order, repo)
		s.Stepped(repo, t0, time.Time{})
	}
	if order[0] != "acme/a" || order[1] != "acme/b" {
		t.Errorf("first round %v, want by name on a tie", order)
	}
	if repo, wait := s.Next(repos, t0.Add(time.Second)); repo != "" || wait != 9*time.Second {
		t.Errorf("after one round: %q due, wait %s; want none due, 9s", repo, wait)
	}
}

// A chain woken for a reason (a deadline, a changed proof) goes before
// every chain whose round is due, however many there are and however
// late their rounds are.
func TestScheduleReasonsGoBeforeRounds(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	s := NewSchedule(time.Second)
	var repos []string
	for i := range 1000 {
		repos = append(repos, fmt.Sprintf("fill/r%04d", i))
	}
	repos = append(repos, "acme/shop")
	for _, r := range repos {
		s.Stepped(r, t0, time.Time{})
	}
	s.Stepped("acme/shop", t0, t0.Add(8*time.Second)) // a soak ends then

	late := t0.Add(9 * time.Second) // every round is overdue
	if repo, _ := s.Next(repos, late); repo != "acme/shop" {
		t.Fatalf("at the deadline, %q is stepped first; want acme/shop", repo)
	}
	s.Stepped("acme/shop", late, time.Time{})
	if repo, _ := s.Next(repos, late); repo == "acme/shop" || repo == "" {
		t.Fatalf("after its step, %q is due; want an overdue round of another chain", repo)
	}

	s.Wake("acme/shop", late) // a proof changed mid-round
	if repo, _ := s.Next(repos, late); repo != "acme/shop" {
		t.Errorf("a woken chain waits behind overdue rounds: %q first", repo)
	}
}

func TestScheduleWaitsForTheEarlierOfDeadlineAndRound(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	s := NewSchedule(15 * time.Second)
	repos := []string{"acme/shop"}
	s.Stepped("acme/shop", t0, t0.Add(4*time.Second))
	if repo, wait := s.Next(repos, t0); repo != "" || wait != 4*time.Second {
		t.Errorf("deadline before the round: %q due, wait %s; want 4s", repo, wait)
	}
	s.Stepped("acme/shop", t0, t0.Add(time.Hour))
	if repo, wait := s.Next(repos, t0); repo != "" || wait != 15*time.Second {
		t.Errorf("deadline after the round: %q due, wait %s; want 15s", repo, wait)
	}
	s.Wake("acme/shop", t0.Add(time.Second))
	if repo, wait := s.Next(repos, t0); repo != "" || wait != time.Second {
		t.Errorf("woken for 1s: %q due, wait %s", repo, wait)
	}
}

func TestScheduleForgetsChainsNoLongerListed(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	s := NewSchedule(time.Second)
	s.Stepped("acme/gone", t0, t0.Add(time.Second))
	if repo, _ := s.Next([]string{"acme/shop"}, t0.Add(2*time.Second)); repo != "acme/shop" {
		t.Errorf("%q due; want the listed chain, never the removed one", repo)
	}
	if _, ok := s.deadline["acme/gone"]; ok {
		t.Error("the removed chain's deadline is kept")
	}
	if repo, wait := s.Next(nil, t0); repo != "" || wait != time.Second {
		t.Errorf("no chains: %q due, wait %s; want none, one interval", repo, wait)
	}
}

// A proof that changes while its chain steps wakes it again: the step
// may have read the proof before the change.
func TestScheduleKeepsAWakeDuringTheStep(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	s := NewSchedule(15 * time.Second)
	repos := []string{"acme/shop"}
	s.Wake("acme/shop", t0)
	if repo, _ := s.Next(repos, t0); repo != "acme/shop" {
		t.Fatalf("woken: %q due", repo)
	}
	s.Wake("acme/shop", t0.Add(time.Second)) // while it steps
	s.Stepped("acme/shop", t0, time.Time{})
	if repo, _ := s.Next(repos, t0.Add(3*time.Second)); repo != "acme/shop" {
		t.Errorf("the wake during the step was lost: %q due; want acme/shop at once, not at its round", repo)
	}
	s.Stepped("acme/shop", t0.Add(3*time.Second), time.Time{})
	if repo, wait := s.Next(repos, t0.Add(4*time.Second)); repo != "" || wait != 14*time.Second {
		t.Errorf("after the second step: %q due, wait %s; want its round", repo, wait)
	}
}

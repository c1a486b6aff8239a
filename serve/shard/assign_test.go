package shard

import (
	"fmt"
	"slices"
	"testing"
)

func TestAssignIsBalancedAndTotal(t *testing.T) {
	for _, tc := range []struct{ members, shards int }{{1, 3}, {3, 3}, {2, 3}, {3, 4}, {4, 3}, {3, 30}, {7, 64}} {
		var ms []string
		for i := range tc.members {
			ms = append(ms, fmt.Sprintf("replica-%d", i))
		}
		got := Assign(ms, tc.shards, nil)
		owner := map[int]string{}
		lo, hi := tc.shards, 0
		for _, m := range ms {
			for _, k := range got[m] {
				if o, ok := owner[k]; ok {
					t.Errorf("%d members, %d shards: shard %d assigned to %s and %s", tc.members, tc.shards, k, o, m)
				}
				owner[k] = m
			}
			lo, hi = min(lo, len(got[m])), max(hi, len(got[m]))
		}
		if len(owner) != tc.shards {
			t.Errorf("%d members, %d shards: %d shards assigned, want all", tc.members, tc.shards, len(owner))
		}
		if hi-lo > 1 {
			t.Errorf("%d members, %d shards: members hold %d to %d shards, want at most one apart: %v", tc.members, tc.shards, lo, hi, got)
		}
	}
}

func TestAssignAgreesWhateverTheOrder(t *testing.T) {
	held := map[int]string{0: "c", 1: "c", 2: "c", 3: "c", 4: "a", 9: "gone"}
	a := Assign([]string{"b", "a", "c"}, 10, held)
	b := Assign([]string{"c", "b", "a", "a"}, 10, held)
	for _, m := range []string{"a", "b", "c"} {
		if !slices.Equal(a[m], b[m]) {
			t.Errorf("member %s: %v in one order, %v in another", m, a[m], b[m])
		}
	}
}

// holders inverts an assignment: shard → member.
func holders(a map[string][]int) map[int]string {
	out := map[int]string{}
	for m, ks := range a {
		for _, k := range ks {
			out[k] = m
		}
	}
	return out
}

// moved counts the shards whose holder in before is among members and
// differs in after.
func moved(before, after map[int]string, members ...string) int {
	n := 0
	for k, m := range before {
		if slices.Contains(members, m) && after[k] != m {
			n++
		}
	}
	return n
}

// A member leaving moves its own shards only; one joining takes only
// the shards above the others' new share; and an assignment that is
// held already is kept as it is.
func TestAssignMovesOnlyTheShardsItMust(t *testing.T) {
	for _, tc := range []struct{ members, shards int }{{4, 4}, {4, 64}, {3, 4}, {5, 7}, {2, 3}} {
		var ms []string
		for i := range tc.members {
			ms = append(ms, fmt.Sprintf("replica-%d", i))
		}
		now := holders(Assign(ms, tc.shards, nil))
		if again := holders(Assign(ms, tc.shards, now)); moved(now, again, ms...) != 0 {
			t.Errorf("%d members, %d shards: held as assigned, %d shards move", tc.members, tc.shards, moved(now, again, ms...))
		}
		for _, gone := range ms {
			stay := slices.DeleteFunc(slices.Clone(ms), func(m string) bool { return m == gone })
			after := holders(Assign(stay, tc.shards, now))
			if n := moved(now, after, stay...); n != 0 {
				t.Errorf("%d members, %d shards, %s leaves: %d shards of the others move, want none", tc.members, tc.shards, gone, n)
			}
			if len(after) != tc.shards {
				t.Errorf("%d members, %d shards, %s leaves: %d shards assigned", tc.members, tc.shards, gone, len(after))
			}
		}
		joined := append(slices.Clone(ms), "replica-new")
		after := Assign(joined, tc.shards, now)
		if n, want := moved(now, holders(after), ms...), len(after["replica-new"]); n != want || want != tc.shards/len(joined) {
			t.Errorf("%d members, %d shards, one joins: %d shards move, it takes %d, want its share %d and no other move",
				tc.members, tc.shards, n, want, tc.shards/len(joined))
		}
	}
}

func TestOfIsStableAndInRange(t *testing.T) {
	seen := map[int]bool{}
	for i := range 300 {
		app := fmt.Sprintf("app-%d", i)
		k := Of(app, 3)
		if k < 0 || k >= 3 || Of(app, 3) != k {
			t.Fatalf("Of(%q, 3) = %d, want a stable shard in [0,3)", app, k)
		}
		seen[k] = true
	}
	if len(seen) != 3 {
		t.Errorf("300 apps fall in %d of 3 shards", len(seen))
	}
}

func TestLeaseSafe(t *testing.T) {
	for in, want := range map[string]string{"pinbot-7d9f-abc": "pinbot-7d9f-abc", "Replica_A": "replica-a", "-x.": "x"} {
		if got := leaseSafe(in); got != want {
			t.Errorf("leaseSafe(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestValidateNamesTheFlag(t *testing.T) {
	o := Options{Shards: 0, ID: "a", Namespace: "ns", Duration: 3, RenewDeadline: 2, RetryPeriod: 1}
	if err := o.Validate(); err == nil || err.Error() != "flag --shards: want at least 1, got 0" {
		t.Errorf("Validate() = %v, want the --shards error", err)
	}
}

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
		got := Assign(ms, tc.shards)
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
	a := Assign([]string{"b", "a", "c"}, 10)
	b := Assign([]string{"c", "b", "a", "a"}, 10)
	for _, m := range []string{"a", "b", "c"} {
		if !slices.Equal(a[m], b[m]) {
			t.Errorf("member %s: %v in one order, %v in another", m, a[m], b[m])
		}
	}
}

func TestAssignMovesFewShardsWhenAMemberLeaves(t *testing.T) {
	before := Assign([]string{"a", "b", "c", "d"}, 64)
	after := Assign([]string{"a", "b", "c"}, 64)
	moved := 0
	for _, m := range []string{"a", "b", "c"} {
		for _, k := range before[m] {
			if !slices.Contains(after[m], k) {
				moved++
			}
		}
	}
	// Only d's 16 shards need to move; a balanced rendezvous moves a few
	// more to even the counts out, never most of them.
	if moved > 16 {
		t.Errorf("%d shards of the staying members moved, want few (d held %d)", moved, len(before["d"]))
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

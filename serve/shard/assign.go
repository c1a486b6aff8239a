package shard

import (
	"cmp"
	"hash/fnv"
	"slices"
	"strconv"
)

// Of returns the shard of key among n: the FNV-1a hash of key, mod n.
// key is an app's config.App.ShardKey, where it deploys, so that one
// namespace's apps share a shard. It depends on nothing else, so every
// replica agrees on it, and an app keeps its shard for as long as n and
// its destination stay the same.
func Of(key string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(n))
}

// Assign returns the shards each of members holds, out of n, given who
// holds each shard now (held; holders that are not members, and shards
// out of range, are ignored). Every member gets n/len(members) shards,
// and n%len(members) of them one more.
//
// A member keeps the shards it holds, as many as its share allows (those
// it ranks highest; the members holding most keep the extra ones). Each
// shard left goes to the member that ranks it highest (rendezvous
// hashing) among those below their share, then among those at it. So a
// member that leaves moves only its own shards, one that joins takes only
// the shards above the others' shares, and every replica that sees the
// same members and holders computes the same assignment. No members
// assign nothing.
func Assign(members []string, n int, held map[int]string) map[string][]int {
	out := map[string][]int{}
	if len(members) == 0 || n <= 0 {
		return out
	}
	ms := slices.Clone(members)
	slices.Sort(ms)
	ms = slices.Compact(ms)
	base, extra := n/len(ms), n%len(ms)

	holds := map[string][]int{}
	for k := range n {
		if m, ok := held[k]; ok && slices.Contains(ms, m) {
			holds[m] = append(holds[m], k)
		}
	}
	// The members holding most keep first, so they keep the extra shards.
	byHeld := slices.Clone(ms)
	slices.SortStableFunc(byHeld, func(a, b string) int { return cmp.Compare(len(holds[b]), len(holds[a])) })
	taken := make([]bool, n)
	for _, m := range byHeld {
		ks := holds[m]
		slices.SortFunc(ks, func(a, b int) int { return cmp.Compare(score(m, b), score(m, a)) })
		share := base
		if extra > 0 && len(ks) > base {
			share, extra = base+1, extra-1
		}
		for _, k := range ks[:min(len(ks), share)] {
			out[m] = append(out[m], k)
			taken[k] = true
		}
	}
	// The shards left: first to the members below their share, then one
	// each to as many members at it as extra shards remain.
	for _, room := range []func(m string) bool{
		func(m string) bool { return len(out[m]) < base },
		func(m string) bool { return extra > 0 && len(out[m]) == base },
	} {
		for k := range n {
			if taken[k] {
				continue
			}
			best, bestScore := "", uint64(0)
			for _, m := range ms {
				if s := score(m, k); room(m) && (best == "" || s > bestScore) {
					best, bestScore = m, s
				}
			}
			if best == "" {
				continue
			}
			if len(out[best]) == base {
				extra--
			}
			out[best] = append(out[best], k)
			taken[k] = true
		}
	}
	for _, m := range ms {
		slices.Sort(out[m])
	}
	return out
}

// score ranks shard k for member m.
func score(m string, k int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(m))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(k)))
	return h.Sum64()
}

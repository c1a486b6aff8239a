package shard

import (
	"hash/fnv"
	"slices"
	"strconv"
)

// Of returns the shard of app among n: the FNV-1a hash of its name, mod
// n. It depends on nothing else, so every replica agrees on it, and an
// app keeps its shard for as long as n stays the same.
func Of(app string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(app))
	return int(h.Sum32() % uint32(n))
}

// Assign returns the shards each of members holds, out of n: every
// member holds n/len(members) shards, and n%len(members) of them one
// more. Each shard goes to the member that ranks it highest
// (rendezvous hashing) among those with room left, so every replica
// that sees the same members computes the same assignment, and a member
// that comes or goes moves few shards. No members assign nothing.
func Assign(members []string, n int) map[string][]int {
	out := map[string][]int{}
	if len(members) == 0 || n <= 0 {
		return out
	}
	ms := slices.Clone(members)
	slices.Sort(ms)
	ms = slices.Compact(ms)
	base, extra := n/len(ms), n%len(ms)
	for k := range n {
		best, bestScore := "", uint64(0)
		for _, m := range ms {
			held := len(out[m])
			if held > base || (held == base && extra == 0) {
				continue
			}
			if s := score(m, k); best == "" || s > bestScore {
				best, bestScore = m, s
			}
		}
		if len(out[best]) == base {
			extra--
		}
		out[best] = append(out[best], k)
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

package pins

import (
	"sync"

	"gopkg.in/yaml.v3"
)

// keySet is the set of mapping keys a parse keeps scalar values for, or
// every key (allKeys). Lookups first check the key's length against the
// lengths of the names, which rules out most keys without comparing bytes.
type keySet struct {
	all   bool
	names []string
	lens  uint64 // bit n is set when a name is n bytes long
}

func newKeySet(names ...string) keySet {
	k := keySet{names: names}
	for _, n := range names {
		k.lens |= 1 << min(len(n), 63)
	}
	return k
}

// The keys each file type needs; see yamlSites.
var (
	allKeys       = keySet{all: true}
	manifestKeys  = newKeySet("image", "registry", "repository", "tag", "digest", "sha", "sha256", "imageRegistry", "global")
	kustomizeKeys = newKeySet("image", "registry", "repository", "tag", "digest", "sha", "sha256", "imageRegistry", "global", "images", "name", "newName", "newTag")
	pinsFileKeys  = newKeySet("pins", "image", "tag", "digest")
	// fluxKeys are for YAML files that may hold a Flux Kustomization.
	fluxKeys = newKeySet("image", "registry", "repository", "tag", "digest", "sha", "sha256", "imageRegistry", "global", "apiVersion", "kind", "spec", "images", "name", "newName", "newTag")
	noKeys   = newKeySet()
)

func (k keySet) has(key string) bool {
	if k.all {
		return true
	}
	if k.lens&(1<<min(len(key), 63)) == 0 {
		return false
	}
	for _, s := range k.names {
		if s == key {
			return true
		}
	}
	return false
}

// hasBytes is has for a key not yet a string; it does not allocate.
func (k keySet) hasBytes(key []byte) bool { return k.has(string(key)) }

// str returns a kept key as a string without allocating, and "" for any
// other key: a key that is not kept only holds a collection, and finding
// pins never reads its text.
func (k keySet) str(b []byte) string {
	if k.all {
		return string(b)
	}
	if k.lens&(1<<min(len(b), 63)) != 0 {
		for _, s := range k.names {
			if s == string(b) {
				return s
			}
		}
	}
	return ""
}

// arena hands out nodes, small content slices and other per-file buffers
// from slabs that are reused file after file, since a scan otherwise spends
// most of its time allocating nodes it drops a moment later.
type arena struct {
	nodes  [][]yaml.Node
	ni, nj int // next node: nodes[ni][nj]
	ptrs   [][]*yaml.Node
	pi, pj int
	stack  []fastFrame
	starts []int     // line starts
	sites  []site    // found sites
	repos  repoCache // kept across resets
}

const slabLen = 256

// arenas recycles arenas between files and goroutines.
var arenas = sync.Pool{New: func() any { return &arena{} }}

func getArena() *arena { return arenas.Get().(*arena) }

// putArena resets an arena and returns it for reuse; nothing from it may
// be used afterwards.
func putArena(a *arena) {
	a.reset()
	arenas.Put(a)
}

func (a *arena) node() *yaml.Node {
	if a.ni == len(a.nodes) {
		a.nodes = append(a.nodes, make([]yaml.Node, slabLen))
	}
	n := &a.nodes[a.ni][a.nj]
	if a.nj++; a.nj == slabLen {
		a.ni, a.nj = a.ni+1, 0
	}
	return n
}

// contentN returns an empty slice with room for k children.
func (a *arena) contentN(k int) []*yaml.Node {
	const slab = slabLen * 4
	if k > slab/4 {
		return make([]*yaml.Node, 0, k)
	}
	if a.pi < len(a.ptrs) && a.pj+k > slab {
		a.pi, a.pj = a.pi+1, 0
	}
	if a.pi == len(a.ptrs) {
		a.ptrs = append(a.ptrs, make([]*yaml.Node, slab))
	}
	c := a.ptrs[a.pi][a.pj : a.pj : a.pj+k]
	a.pj += k
	return c
}

// reset zeroes what was handed out, for reuse.
func (a *arena) reset() {
	for i := 0; i <= a.ni && i < len(a.nodes); i++ {
		end := slabLen
		if i == a.ni {
			end = a.nj
		}
		clear(a.nodes[i][:end])
	}
	for i := 0; i <= a.pi && i < len(a.ptrs); i++ {
		end := slabLen * 4
		if i == a.pi {
			end = a.pj
		}
		clear(a.ptrs[i][:end])
	}
	a.ni, a.nj, a.pi, a.pj = 0, 0, 0, 0
	a.stack = a.stack[:0]
}

package hostsim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// repo is a git repository as the host's jobs see it, without git: commits
// with their parents and files (a file per component, holding the version
// its builder pushed, and a file main holds of its own that pushes by hand
// change), branches, notes. It keeps, besides, what only the simulator may
// know and the host must not: which versions are broken (the checks fail
// on any tree that holds one), which trees a run of the checks really
// passed on, and which commits of main the host's compare-and-swap put
// there, and which a hand pushed.
type repo struct {
	commits map[string]*commit
	refs    map[string]string // branch (main included) -> commit
	notes   map[string][]byte // commit -> its receipt
	head    []byte            // the host's signed head (receipt.HeadRef)
	blobIDs map[string]string // a note's content -> its blob's id (history)

	broken map[string]bool    // file versions the checks fail on
	passed map[string]bool    // trees a run of the checks passed on
	landed map[string]landing // commits of main the host landed
	byHand map[string]bool    // commits pushed straight to main
	n      int
	plant  string // Options.plant
	// noteFails: the landing under way cannot write its notes (the notes
	// ref locked by another git), though it moves main.
	noteFails bool
}

// commit is one commit: a merge the host made names its base and tip.
type commit struct {
	id      string
	parents []string
	files   map[string]string
	tree    string
}

// landing is a commit of main the host's Land job landed (one
// compare-and-swap lands a batch of them).
type landing struct {
	component string
	tip       string // the builder's commit it merges
	run       int
	// head is the commit the compare-and-swap moved main to when this one
	// landed in a batch ("" when alone): its tree passed, not this one's.
	head string
}

func newRepo() *repo {
	r := &repo{commits: map[string]*commit{}, refs: map[string]string{}, notes: map[string][]byte{},
		broken: map[string]bool{}, passed: map[string]bool{}, landed: map[string]landing{}, byHand: map[string]bool{}}
	root := r.add([]string{}, map[string]string{"README": "the shop"}, "root")
	r.refs["main"] = root.id
	return r
}

// digest names an object by its parts, as git's ids do: 40 hex digits.
func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:40]
}

func treeOf(files map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(files)) {
		b.WriteString(k + "=" + files[k] + "\n")
	}
	return digest("tree", b.String())
}

// add makes a commit (or finds the same one made before: merges are made
// the same way whichever job makes them, as the host's are).
func (r *repo) add(parents []string, files map[string]string, salt string) *commit {
	tree := treeOf(files)
	id := digest(append([]string{"commit", tree, salt}, parents...)...)
	if c, ok := r.commits[id]; ok {
		return c
	}
	c := &commit{id: id, parents: parents, files: files, tree: tree}
	r.commits[id] = c
	return c
}

// push makes a commit on branch (from its tip, else from main) that sets
// file to version, and moves the branch to it.
func (r *repo) push(branch, file, version string) string {
	parent := r.refs[branch]
	if parent == "" {
		parent = r.refs["main"]
	}
	files := maps.Clone(r.commits[parent].files)
	files[file] = version
	r.n++
	c := r.add([]string{parent}, files, fmt.Sprintf("push %d", r.n))
	r.refs[branch] = c.id
	return c.id
}

// ancestors is a and every commit it comes from.
func (r *repo) ancestors(a string) map[string]bool {
	seen := map[string]bool{}
	todo := []string{a}
	for len(todo) > 0 {
		id := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		if c := r.commits[id]; c != nil {
			todo = append(todo, c.parents...)
		}
	}
	return seen
}

func (r *repo) isAncestor(a, b string) bool { return r.ancestors(b)[a] }

// mergeBase is a best common ancestor of a and b.
func (r *repo) mergeBase(a, b string) string {
	aa, bb := r.ancestors(a), r.ancestors(b)
	var common []string
	for id := range aa {
		if bb[id] {
			common = append(common, id)
		}
	}
	slices.Sort(common)
	for _, c := range common {
		best := true
		for _, d := range common {
			if d != c && r.isAncestor(c, d) {
				best = false
				break
			}
		}
		if best {
			return c
		}
	}
	return ""
}

// merge is the merge commit of tip into base, as merge-tree and
// commit-tree make it: three-way by file (a file both changed takes
// tip's: each builder writes its own component's file, so they never
// conflict).
func (r *repo) merge(base, tip string) *commit {
	mb := r.commits[r.mergeBase(base, tip)]
	files := maps.Clone(r.commits[base].files)
	for k, v := range r.commits[tip].files {
		if mb == nil || mb.files[k] != v {
			files[k] = v
		}
	}
	return r.add([]string{base, tip}, files, "merge")
}

// passes says whether the checks pass on a tree: none of its versions is
// broken.
func (r *repo) passes(c *commit) bool {
	for _, v := range c.files {
		if r.broken[v] {
			return false
		}
	}
	return true
}

// batched is how many of the commits the host landed landed in a batch.
func (r *repo) batched() int {
	n := 0
	for _, l := range r.landed {
		if l.head != "" {
			n++
		}
	}
	return n
}

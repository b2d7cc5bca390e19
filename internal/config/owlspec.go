package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentforeman/foreman/coordinator"
)

// OwlSpec is an owl spec as read: its components, and how each dependency
// bullet was read, so that validate and init can show the operator what
// was taken from prose and why.
type OwlSpec struct {
	Components []coordinator.Component
	Bullets    []Bullet   // every dependency bullet, component by component
	Cycles     []OwlCycle // cycles prose would have made, left out
	Warnings   []string   // what the spec's author should fix: cut cycles, literal names of nothing
}

// Reading is how a dependency bullet was taken.
type Reading int

const (
	// Prose: the bullet names one or more other components in its words.
	Prose Reading = iota
	// Literal: `name` or "component: name", the author's exact word.
	Literal
	// None: "none", "nothing (pure functions)": no dependency, said so.
	None
	// Note: the bullet names no other component, or says (note).
	Note
)

func (r Reading) String() string {
	return [...]string{"prose", "literal", "none", "note"}[r]
}

// Bullet is one dependency bullet and what it was read as.
type Bullet struct {
	At        string // file:line in the spec directory
	Component string // whose "depends on:" it is under
	Text      string // as written
	Reading   Reading
	Deps      []Dep  // Prose and Literal: the components it names, in order
	Why       string // Note: why it is one
	Unknown   string // a literal name that names no component
}

// Dep is a component a bullet names.
type Dep struct {
	Name  string
	Words string // Prose: the words around the name as written ("agent-runner", "from identity module")
	Cut   bool   // left out: it would close a cycle made from prose
}

// OwlCycle is a cycle prose would have made: the path, and the bullets
// left out to break it.
type OwlCycle struct {
	Path string   // "a -> b -> a"
	At   []string // file:line of each bullet left out
}

// ReadDep is how one dependency of a component was read.
type ReadDep struct {
	Name    string
	Literal bool     // some bullet names it exactly (`name`, component: name)
	Words   []string // from prose: the words that named it, when they are more than the name
}

// Read lists how component c's dependencies were read, in the order of its
// Deps.
func (s *OwlSpec) Read(c string) []ReadDep {
	var out []ReadDep
	at := map[string]int{}
	for _, b := range s.Bullets {
		if b.Component != c {
			continue
		}
		for _, d := range b.Deps {
			if d.Cut {
				continue
			}
			i, ok := at[d.Name]
			if !ok {
				i = len(out)
				at[d.Name] = i
				out = append(out, ReadDep{Name: d.Name})
			}
			r := &out[i]
			if b.Reading == Literal {
				r.Literal = true
			} else if !strings.EqualFold(d.Words, d.Name) && !slices.Contains(r.Words, d.Words) {
				r.Words = append(r.Words, d.Words)
			}
		}
	}
	for i := range out {
		if out[i].Literal {
			out[i].Words = nil
		}
	}
	return out
}

// Count is how many bullets were read as r.
func (s *OwlSpec) Count(r Reading) int {
	n := 0
	for _, b := range s.Bullets {
		if b.Reading == r {
			n++
		}
	}
	return n
}

// link gives each component the dependencies its bullets name, each once,
// in the order first named.
func (s *OwlSpec) link() {
	idx := make(map[string]int, len(s.Components))
	for i, c := range s.Components {
		idx[c.Name] = i
	}
	for _, b := range s.Bullets {
		c := &s.Components[idx[b.Component]]
		for _, d := range b.Deps {
			if !d.Cut && !slices.Contains(c.Deps, d.Name) {
				c.Deps = append(c.Deps, d.Name)
			}
		}
	}
}

// cutProseCycles leaves out what prose says when it would close a cycle:
// every prose dependency on a cycle is cut, with all the bullets that gave
// it, until no prose dependency is on one. The reading is a guess, and a
// cycle halts the whole build, so the guess gives way; the operator is
// told which bullets, and the author can say exactly (component: name) or
// mark the wrong one (note). A cycle the author wrote literally is kept:
// the engine halts on it, as on any declared cycle.
func (s *OwlSpec) cutProseCycles() {
	literal := map[[2]string]bool{}
	for _, b := range s.Bullets {
		if b.Reading == Literal {
			for _, d := range b.Deps {
				literal[[2]string{b.Component, d.Name}] = true
			}
		}
	}
	for {
		g := Graph(s.Components)
		if _, c := g.Order(); c == nil {
			return // the usual case, in one pass
		}
		var cycle []int
	search:
		for _, b := range s.Bullets {
			if b.Reading != Prose {
				continue
			}
			for _, d := range b.Deps {
				if d.Cut || literal[[2]string{b.Component, d.Name}] {
					continue
				}
				a, _ := g.Index(b.Component)
				z, _ := g.Index(d.Name)
				if p := g.PathTo(z, a); p != nil {
					cycle = append([]int{a}, p...)
					break search
				}
			}
		}
		if cycle == nil {
			return
		}
		cut := map[[2]string]bool{}
		for i := 0; i+1 < len(cycle); i++ {
			e := [2]string{g.Name(cycle[i]), g.Name(cycle[i+1])}
			if !literal[e] {
				cut[e] = true
			}
		}
		oc := OwlCycle{Path: g.Format(cycle)}
		for i := range s.Bullets {
			b := &s.Bullets[i]
			for j := range b.Deps {
				if d := &b.Deps[j]; !d.Cut && cut[[2]string{b.Component, d.Name}] {
					d.Cut = true
					if !slices.Contains(oc.At, b.At) {
						oc.At = append(oc.At, b.At)
					}
				}
			}
		}
		for i := range s.Components {
			c := &s.Components[i]
			if c.Deps = slices.DeleteFunc(c.Deps, func(d string) bool { return cut[[2]string{c.Name, d}] }); len(c.Deps) == 0 {
				c.Deps = nil
			}
		}
		slices.SortFunc(oc.At, byFileLine)
		s.Cycles = append(s.Cycles, oc)
		s.Warnings = append(s.Warnings, fmt.Sprintf("%s: read as prose, these bullets make a dependency cycle %s: left out so that the build can start; mark the wrong one (note), or write the right one as component: NAME",
			strings.Join(oc.At, ", "), oc.Path))
	}
}

// byFileLine orders "file:line" places by file, then line.
func byFileLine(a, b string) int {
	fa, la := splitAt(a)
	fb, lb := splitAt(b)
	if c := strings.Compare(fa, fb); c != 0 {
		return c
	}
	return la - lb
}

func splitAt(at string) (string, int) {
	i := strings.LastIndexByte(at, ':')
	n, _ := strconv.Atoi(at[i+1:])
	return at[:i], n
}

// Package graph holds a build's dependency graph: components in declaration
// order and "depends on" edges, with cycle detection that reports the cycle
// as a path and a build order that keeps declaration order where it can.
//
// Nodes are small integers (their declaration index), so callers can keep
// per-component state in slices. Every answer is deterministic: ties are
// broken by declaration order and edge insertion order.
package graph

import "strings"

// Graph is a directed graph where an edge a -> b means "a depends on b".
type Graph struct {
	names []string
	index map[string]int
	deps  [][]int // deps[a]: what a depends on, in insertion order
	users [][]int // users[b]: what depends on b, in insertion order
}

// New returns an empty graph.
func New() *Graph { return &Graph{index: make(map[string]int)} }

// Add appends a node and returns its index; an existing name keeps its own.
func (g *Graph) Add(name string) (int, bool) {
	if i, ok := g.index[name]; ok {
		return i, false
	}
	i := len(g.names)
	g.names = append(g.names, name)
	g.index[name] = i
	g.deps = append(g.deps, nil)
	g.users = append(g.users, nil)
	return i, true
}

// Len is the number of nodes.
func (g *Graph) Len() int { return len(g.names) }

// Index finds a node by name.
func (g *Graph) Index(name string) (int, bool) {
	i, ok := g.index[name]
	return i, ok
}

// Name is the name of node i.
func (g *Graph) Name(i int) string { return g.names[i] }

// Deps lists what i depends on. The slice must not be modified.
func (g *Graph) Deps(i int) []int { return g.deps[i] }

// Users lists what depends on i. The slice must not be modified.
func (g *Graph) Users(i int) []int { return g.users[i] }

// HasEdge reports whether a depends on b.
func (g *Graph) HasEdge(a, b int) bool {
	for _, d := range g.deps[a] {
		if d == b {
			return true
		}
	}
	return false
}

// AddEdge records that a depends on b. It reports false if it already did.
// It does not refuse cycles: callers that must keep the graph acyclic ask
// PathTo first.
func (g *Graph) AddEdge(a, b int) bool {
	if g.HasEdge(a, b) {
		return false
	}
	g.deps[a] = append(g.deps[a], b)
	g.users[b] = append(g.users[b], a)
	return true
}

// RemoveEdge drops a -> b. It reports false if there was no such edge.
func (g *Graph) RemoveEdge(a, b int) bool {
	var ok bool
	g.deps[a], ok = remove(g.deps[a], b)
	if ok {
		g.users[b], _ = remove(g.users[b], a)
	}
	return ok
}

func remove(s []int, x int) ([]int, bool) {
	for i, v := range s {
		if v == x {
			return append(s[:i:i], s[i+1:]...), true
		}
	}
	return s, false
}

// PathTo returns a dependency path from a to b (a, ..., b), the shortest
// one, or nil if a does not depend on b, directly or not. Adding the edge
// b -> a would close a cycle exactly when PathTo(a, b) is not nil.
func (g *Graph) PathTo(a, b int) []int {
	if a == b {
		return []int{a}
	}
	prev := map[int]int{a: a}
	queue := []int{a}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, d := range g.deps[n] {
			if _, seen := prev[d]; seen {
				continue
			}
			prev[d] = n
			if d == b {
				return walkBack(prev, a, b)
			}
			queue = append(queue, d)
		}
	}
	return nil
}

func walkBack(prev map[int]int, a, b int) []int {
	path := []int{b}
	for n := b; n != a; {
		n = prev[n]
		path = append(path, n)
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return path
}

// Cycle returns a cycle as a closed path (a, b, ..., a), or nil if the graph
// is acyclic. The cycle reported is the first one a depth-first search in
// declaration order meets, so the same graph always reports the same cycle.
func (g *Graph) Cycle() []int {
	_, cycle := g.Order()
	return cycle
}

// Order returns a build order (every node after its dependencies, otherwise
// as close to declaration order as the edges allow), or, if there is none,
// a cycle as a closed path.
func (g *Graph) Order() (order, cycle []int) {
	const (
		unseen = iota
		open
		done
	)
	state := make([]uint8, len(g.names))
	order = make([]int, 0, len(g.names))
	var stack []frame
	for root := range g.names {
		if state[root] != unseen {
			continue
		}
		state[root] = open
		stack = append(stack[:0], frame{root, 0})
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next == len(g.deps[top.node]) {
				state[top.node] = done
				order = append(order, top.node)
				stack = stack[:len(stack)-1]
				continue
			}
			d := g.deps[top.node][top.next]
			top.next++
			switch state[d] {
			case open:
				return nil, closeCycle(stack, d)
			case unseen:
				state[d] = open
				stack = append(stack, frame{d, 0})
			}
		}
	}
	return order, nil
}

// frame is a node on the depth-first search stack and its next dependency.
type frame struct{ node, next int }

// closeCycle reads the cycle through d off the search stack.
func closeCycle(stack []frame, d int) []int {
	var cycle []int
	for _, f := range stack {
		if f.node == d || len(cycle) > 0 {
			cycle = append(cycle, f.node)
		}
	}
	return append(cycle, d)
}

// Format writes a path of nodes as "a -> b -> c".
func (g *Graph) Format(path []int) string {
	var b strings.Builder
	for i, n := range path {
		if i > 0 {
			b.WriteString(" -> ")
		}
		b.WriteString(g.names[n])
	}
	return b.String()
}

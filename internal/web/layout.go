package web

import (
	"cmp"
	"slices"

	"github.com/agentforeman/foreman/coordinator"
)

// Layout places the components on a grid for the board: a component stands
// in a column right of everything it depends on, and the order within each
// column is chosen to cross few edges (a layered drawing after Sugiyama).
// It is computed here rather than in the page so that it is tested, and
// the same for every viewer.
type Layout struct {
	Columns int     `json:"columns"`
	Rows    int     `json:"rows"`  // slots in the tallest column
	Nodes   []Place `json:"nodes"` // in declaration order
	Edges   []Edge  `json:"edges"`
}

// Place is where one component stands. Rows are fractional because shorter
// columns are centred.
type Place struct {
	Name   string  `json:"name"`
	Column int     `json:"column"`
	Row    float64 `json:"row"`
}

// Edge runs from a dependency to the component that needs it. An edge that
// spans columns takes a slot of its own in each column between, listed in
// Via, so that it is drawn around the components there, not through them.
type Edge struct {
	From string  `json:"from"`
	To   string  `json:"to"`
	Via  []Point `json:"via,omitempty"`
	Back bool    `json:"back,omitempty"` // closes a dependency cycle, so it runs right to left
}

// Point is a slot on the grid.
type Point struct {
	Column int     `json:"column"`
	Row    float64 `json:"row"`
}

// orderingSweeps bounds the crossing reduction; more rarely helps the
// small graphs of a build.
const orderingSweeps = 12

// slot is one place in a column: a component, or a bend of a long edge.
type slot struct {
	node         int // component index, or -1 for a bend
	preds, succs []int
}

func arrange(comps []coordinator.ComponentView) *Layout {
	n := len(comps)
	index := make(map[string]int, n)
	for i, c := range comps {
		index[c.Name] = i
	}
	deps := make([][]int, n)
	for i, c := range comps {
		for _, d := range c.Deps {
			if j, ok := index[d]; ok && j != i && !slices.Contains(deps[i], j) {
				deps[i] = append(deps[i], j)
			}
		}
	}
	col, back := columns(deps)

	l := &Layout{}
	for _, c := range col {
		l.Columns = max(l.Columns, c+1)
	}
	grid := make([][]int, l.Columns)
	var slots []slot
	add := func(column, node int) int {
		slots = append(slots, slot{node: node})
		grid[column] = append(grid[column], len(slots)-1)
		return len(slots) - 1
	}
	for i := range comps {
		add(col[i], i)
	}
	link := func(a, b int) {
		slots[a].succs = append(slots[a].succs, b)
		slots[b].preds = append(slots[b].preds, a)
	}
	type edgeSlots struct {
		from, to int
		bends    []int
	}
	var edges []edgeSlots
	for i := range comps {
		for _, d := range deps[i] {
			e := edgeSlots{from: d, to: i}
			if !back[[2]int{d, i}] {
				prev := d
				for c := col[d] + 1; c < col[i]; c++ {
					b := add(c, -1)
					e.bends = append(e.bends, b)
					link(prev, b)
					prev = b
				}
				link(prev, i)
			}
			edges = append(edges, e)
		}
	}

	order(grid, slots)

	pos := make([]float64, len(slots))
	colOf := make([]int, len(slots))
	for c, column := range grid {
		l.Rows = max(l.Rows, len(column))
		for p, s := range column {
			colOf[s] = c
			pos[s] = float64(p)
		}
	}
	for _, column := range grid {
		offset := float64(l.Rows-len(column)) / 2
		for _, s := range column {
			pos[s] += offset
		}
	}
	l.Nodes = make([]Place, n)
	for i, c := range comps {
		l.Nodes[i] = Place{Name: c.Name, Column: colOf[i], Row: pos[i]}
	}
	l.Edges = make([]Edge, 0, len(edges))
	for _, e := range edges {
		out := Edge{From: comps[e.from].Name, To: comps[e.to].Name, Back: back[[2]int{e.from, e.to}]}
		for _, b := range e.bends {
			out.Via = append(out.Via, Point{Column: colOf[b], Row: pos[b]})
		}
		l.Edges = append(l.Edges, out)
	}
	return l
}

// columns gives each component the length of the longest chain of
// dependencies below it. A cycle (the engine halts the build on one, but
// the board must still draw it) is broken at the edge that closes it, which
// is reported as a back edge {dep, dependent}.
func columns(deps [][]int) ([]int, map[[2]int]bool) {
	const (
		unseen = iota
		onPath
		done
	)
	col := make([]int, len(deps))
	state := make([]uint8, len(deps))
	back := map[[2]int]bool{}
	var visit func(i int)
	visit = func(i int) {
		state[i] = onPath
		for _, d := range deps[i] {
			switch state[d] {
			case onPath:
				back[[2]int{d, i}] = true
				continue
			case unseen:
				visit(d)
			}
			col[i] = max(col[i], col[d]+1)
		}
		state[i] = done
	}
	for i := range deps {
		if state[i] == unseen {
			visit(i)
		}
	}
	return col, back
}

// order sorts each column by the mean position of its neighbours, sweeping
// right then left, and keeps the order with the fewest crossings found.
func order(grid [][]int, slots []slot) {
	pos := make([]float64, len(slots))
	setPos := func(column []int) {
		for p, s := range column {
			pos[s] = float64(p)
		}
	}
	for _, column := range grid {
		setPos(column)
	}
	key := make([]float64, len(slots)) // by slot: where it should go in its column
	best, bestCross := cloneGrid(grid), crossings(grid, slots, pos)
	for sweep := 0; sweep < orderingSweeps && bestCross > 0; sweep++ {
		right := sweep%2 == 0
		for k := 1; k < len(grid); k++ {
			c := k
			if !right {
				c = len(grid) - 1 - k
			}
			column := grid[c]
			for _, s := range column {
				near := slots[s].preds
				if !right {
					near = slots[s].succs
				}
				key[s] = pos[s] // nothing to follow: stay put
				if len(near) > 0 {
					sum := 0.0
					for _, o := range near {
						sum += pos[o]
					}
					key[s] = sum / float64(len(near))
				}
			}
			slices.SortStableFunc(column, func(a, b int) int { return cmp.Compare(key[a], key[b]) })
			setPos(column)
		}
		if x := crossings(grid, slots, pos); x < bestCross {
			best, bestCross = cloneGrid(grid), x
		}
	}
	for c := range grid {
		copy(grid[c], best[c])
	}
}

// crossings counts pairs of edges between neighbouring columns that cross.
// Two edges cross when their ends are in opposite orders in the two
// columns: sorted by the left end (then the right), they are the
// inversions among the right ends, which a Fenwick tree over the right
// column's positions counts in O(e log n) rather than comparing every
// pair, which a wide build cannot afford.
func crossings(grid [][]int, slots []slot, pos []float64) int {
	n := 0
	type seg struct{ a, b int }
	var segs []seg
	var tree []int
	for c, column := range grid {
		if c+1 == len(grid) {
			break
		}
		segs = segs[:0]
		for _, s := range column {
			for _, t := range slots[s].succs {
				segs = append(segs, seg{int(pos[s]), int(pos[t])})
			}
		}
		slices.SortFunc(segs, func(x, y seg) int {
			if x.a != y.a {
				return x.a - y.a
			}
			return x.b - y.b
		})
		// A Fenwick tree over the right column's positions, 1-based:
		// how many of the edges seen so far end at each.
		tree = slices.Grow(tree[:0], len(grid[c+1])+1)[:len(grid[c+1])+1]
		clear(tree)
		for k, sg := range segs {
			notAbove := 0 // earlier edges ending at or before sg.b
			for i := sg.b + 1; i > 0; i -= i & -i {
				notAbove += tree[i]
			}
			// Every earlier edge starts at or before sg.a, and those that
			// start with it end at or before sg.b (the sort): the rest cross.
			n += k - notAbove
			for i := sg.b + 1; i < len(tree); i += i & -i {
				tree[i]++
			}
		}
	}
	return n
}

func cloneGrid(g [][]int) [][]int {
	out := make([][]int, len(g))
	for i, c := range g {
		out[i] = slices.Clone(c)
	}
	return out
}

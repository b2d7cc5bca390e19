package web

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/coordinator"
)

// comps reads "name:dep,dep" specs.
func comps(spec ...string) []coordinator.ComponentView {
	var out []coordinator.ComponentView
	for _, s := range spec {
		name, deps, ok := strings.Cut(s, ":")
		c := coordinator.ComponentView{Name: name}
		if ok {
			c.Deps = strings.Split(deps, ",")
		}
		out = append(out, c)
	}
	return out
}

func places(l *Layout) map[string]Place {
	m := map[string]Place{}
	for _, p := range l.Nodes {
		m[p.Name] = p
	}
	return m
}

func TestLayoutPutsDependenciesLeft(t *testing.T) {
	// The bookshop of config.example.yaml.
	l := arrange(comps("db", "auth:db", "catalog:db", "cart:auth,catalog", "payments:cart", "mailer:payments", "web:catalog,cart,payments"))
	p := places(l)
	assert.Equal(t, 5, l.Columns)
	assert.Equal(t, 0, p["db"].Column)
	assert.Equal(t, 1, p["auth"].Column)
	assert.Equal(t, 1, p["catalog"].Column)
	assert.Equal(t, 2, p["cart"].Column)
	assert.Equal(t, 4, p["web"].Column, "after payments, its deepest dependency")

	seen := map[Point]string{}
	for _, n := range l.Nodes {
		at := Point{n.Column, n.Row}
		require.Empty(t, seen[at], "%s and %s share a place", n.Name, seen[at])
		seen[at] = n.Name
	}
	for _, e := range l.Edges {
		assert.Less(t, p[e.From].Column, p[e.To].Column, "%s -> %s", e.From, e.To)
		assert.Len(t, e.Via, p[e.To].Column-p[e.From].Column-1, "one bend per column crossed: %s -> %s", e.From, e.To)
		for _, v := range e.Via {
			assert.Empty(t, seen[v], "the edge %s -> %s runs through %s", e.From, e.To, seen[v])
		}
	}
	assert.Len(t, l.Edges, 9)
}

func TestLayoutUncrossesEdges(t *testing.T) {
	// Declared so that the first guess crosses: a2 needs b1, a1 needs b2.
	l := arrange(comps("b1", "b2", "a2:b2", "a1:b1"))
	p := places(l)
	assert.Equal(t, p["b1"].Row < p["b2"].Row, p["a1"].Row < p["a2"].Row, "each follows its dependency: %+v", p)
}

func TestLayoutDrawsACycle(t *testing.T) {
	l := arrange(comps("a:c", "b:a", "c:b", "d"))
	require.Len(t, l.Nodes, 4)
	back := 0
	for _, e := range l.Edges {
		if e.Back {
			back++
		}
	}
	assert.Equal(t, 1, back, "one edge closes the cycle")
	assert.Equal(t, 3, l.Columns)
}

func TestLayoutIgnoresUnknownAndSelfDeps(t *testing.T) {
	l := arrange(comps("a:a,ghost"))
	assert.Empty(t, l.Edges)
	assert.Equal(t, 1, l.Columns)
	assert.Equal(t, 1, l.Rows)
}

func TestLayoutOfAWideBuild(t *testing.T) {
	var spec []string
	for i := range 40 {
		if i < 8 {
			spec = append(spec, fmt.Sprintf("c%d", i))
		} else {
			spec = append(spec, fmt.Sprintf("c%d:c%d,c%d", i, i-8, (i*5)%8))
		}
	}
	l := arrange(comps(spec...))
	assert.Len(t, l.Nodes, 40)
	assert.Equal(t, 5, l.Columns)
}

// crossingsByPairs is crossings the obvious way, every pair compared: the
// reference for the fast count.
func crossingsByPairs(grid [][]int, slots []slot, pos []float64) int {
	n := 0
	for _, column := range grid {
		type seg struct{ a, b float64 }
		var segs []seg
		for _, s := range column {
			for _, t := range slots[s].succs {
				segs = append(segs, seg{pos[s], pos[t]})
			}
		}
		for i := range segs {
			for j := i + 1; j < len(segs); j++ {
				if (segs[i].a-segs[j].a)*(segs[i].b-segs[j].b) < 0 {
					n++
				}
			}
		}
	}
	return n
}

func TestCrossingsCountsEveryPair(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		columns := 2 + rng.IntN(4)
		grid := make([][]int, columns)
		var slots []slot
		for c := range grid {
			for range 1 + rng.IntN(8) {
				slots = append(slots, slot{node: len(slots)})
				grid[c] = append(grid[c], len(slots)-1)
			}
		}
		for c := 0; c+1 < columns; c++ {
			for range rng.IntN(20) {
				a := grid[c][rng.IntN(len(grid[c]))]
				b := grid[c+1][rng.IntN(len(grid[c+1]))]
				slots[a].succs = append(slots[a].succs, b) // repeats too: parallel edges never cross
				slots[b].preds = append(slots[b].preds, a)
			}
		}
		for c := range grid {
			rng.Shuffle(len(grid[c]), func(i, j int) { grid[c][i], grid[c][j] = grid[c][j], grid[c][i] })
		}
		pos := make([]float64, len(slots))
		for _, column := range grid {
			for p, s := range column {
				pos[s] = float64(p)
			}
		}
		require.Equal(t, crossingsByPairs(grid, slots, pos), crossings(grid, slots, pos), "trial %d", trial)
	}
}

// BenchmarkLayout lays out the build of BenchmarkBoardUpdate, which the
// board does once per change of the graph.
func BenchmarkLayout(b *testing.B) {
	for _, shape := range []struct {
		name string
		flat bool
	}{{"flat", true}, {"layered", false}} {
		b.Run(shape.name, func(b *testing.B) {
			v, _ := benchSource(b, 10000, shape.flat).View(context.Background())
			b.ReportAllocs()
			for b.Loop() {
				arrange(v.Components)
			}
		})
	}
}

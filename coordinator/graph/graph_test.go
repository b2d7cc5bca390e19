package graph

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// build makes a graph from "name dep dep..." specs, in order.
func build(t *testing.T, specs ...[]string) *Graph {
	t.Helper()
	g := New()
	for _, s := range specs {
		g.Add(s[0])
	}
	for _, s := range specs {
		a, _ := g.Index(s[0])
		for _, d := range s[1:] {
			b, ok := g.Index(d)
			require.True(t, ok, d)
			g.AddEdge(a, b)
		}
	}
	return g
}

func names(g *Graph, path []int) []string {
	var out []string
	for _, n := range path {
		out = append(out, g.Name(n))
	}
	return out
}

func TestOrderKeepsDeclarationOrderWhereItCan(t *testing.T) {
	g := build(t, []string{"web", "api"}, []string{"api", "db", "auth"}, []string{"db"}, []string{"auth", "db"}, []string{"docs"})
	order, cycle := g.Order()
	require.Nil(t, cycle)
	assert.Equal(t, []string{"db", "auth", "api", "web", "docs"}, names(g, order))
}

func TestCycleIsReportedAsAPath(t *testing.T) {
	g := build(t, []string{"a", "b"}, []string{"b", "c"}, []string{"c", "a"}, []string{"d"})
	assert.Equal(t, "a -> b -> c -> a", g.Format(g.Cycle()))

	self := build(t, []string{"x", "x"})
	assert.Equal(t, "x -> x", self.Format(self.Cycle()))

	tail := build(t, []string{"p", "q"}, []string{"q", "r"}, []string{"r", "q"})
	assert.Equal(t, "q -> r -> q", tail.Format(tail.Cycle()), "the path starts where the cycle closes, not at the root")
}

func TestEdgesAndPaths(t *testing.T) {
	g := build(t, []string{"a", "b"}, []string{"b", "c"}, []string{"c"})
	a, _ := g.Index("a")
	b, _ := g.Index("b")
	c, _ := g.Index("c")
	assert.Equal(t, "a -> b -> c", g.Format(g.PathTo(a, c)))
	assert.Nil(t, g.PathTo(c, a))
	assert.False(t, g.AddEdge(a, b), "duplicate edge")
	assert.Equal(t, []int{a}, g.Users(b))
	assert.True(t, g.RemoveEdge(a, b))
	assert.False(t, g.RemoveEdge(a, b))
	assert.Empty(t, g.Users(b))
	assert.Nil(t, g.PathTo(a, c))
	_, added := g.Add("a")
	assert.False(t, added)
}

func BenchmarkOrder100k(b *testing.B) {
	g := New()
	for i := 0; i < 100000; i++ {
		g.Add(fmt.Sprint("c", i))
	}
	for i := 1; i < 100000; i++ {
		g.AddEdge(i, i/2)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, c := g.Order(); c != nil {
			b.Fatal("cycle")
		}
	}
}

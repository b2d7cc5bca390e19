package web

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/protocol"
)

// TestSameComponentLooksAtEveryField sets each field of a component in
// turn: if ComponentView gains a field that sameComponent does not
// compare, a change to it alone would never reach a live board.
func TestSameComponentLooksAtEveryField(t *testing.T) {
	base := shopView().Components[1]
	typ := reflect.TypeOf(base)
	for i := range typ.NumField() {
		f := typ.Field(i)
		changed := base
		v := reflect.ValueOf(&changed).Elem().Field(i)
		switch v.Kind() {
		case reflect.String:
			v.SetString(v.String() + "x")
		case reflect.Int:
			v.SetInt(v.Int() + 1)
		case reflect.Bool:
			v.SetBool(!v.Bool())
		case reflect.Slice:
			v.Set(reflect.Append(v, reflect.ValueOf("x")))
		case reflect.Struct:
			if f.Type == reflect.TypeOf(coordinator.Cost{}) {
				v.Set(reflect.ValueOf(coordinator.Cost{USD: 1}))
				break
			}
			require.Equal(t, reflect.TypeOf(time.Time{}), f.Type, "a field of a kind this test does not know: %s", f.Name)
			v.Set(reflect.ValueOf(v.Interface().(time.Time).Add(time.Second)))
		case reflect.Pointer:
			require.Equal(t, reflect.TypeOf(&coordinator.Limit{}), f.Type, "a field of a kind this test does not know: %s", f.Name)
			v.Set(reflect.ValueOf(&coordinator.Limit{USD: 1, HasUSD: true}))
		default:
			t.Fatalf("a field of a kind this test does not know: %s %s", f.Name, f.Type)
		}
		assert.False(t, sameComponent(&base, &changed), "a change to %s alone goes unnoticed", f.Name)
	}
	same := base
	same.Deps = append([]string(nil), base.Deps...)
	same.Deadline = base.Deadline.In(time.FixedZone("elsewhere", 3600))
	assert.True(t, sameComponent(&base, &same), "equal values, not identical ones")
}

func TestSnapshotKeepsTheLayoutWhileTheGraphStays(t *testing.T) {
	src := &fakeSource{view: shopView(), health: healthy()}
	s := New(Options{})
	s.Attach(src)
	ctx := context.Background()
	take := func() *snapshot { return s.snapshotFor(ctx, want{gen: s.generation(), asked: time.Now()}) }

	first := take()
	require.NotNil(t, first.layout)
	assert.Equal(t, first.seq, first.graph)
	assert.Nil(t, first.recent)

	src.set(func(f *fakeSource) { f.view.Components[1].Progress = 60 })
	second := take()
	assert.Same(t, first.layout, second.layout, "the same graph: the same layout")
	assert.Equal(t, first.graph, second.graph)
	assert.Equal(t, []changes{{seq: second.seq, comps: []int{1}}}, second.recent)
	assert.Same(t, &first.comps[0][0], &second.comps[0][0], "an unchanged component is not encoded again")

	third := take()
	assert.Equal(t, []changes{{second.seq, []int{1}}, {third.seq, nil}}, third.recent, "nothing changed")
	got, ok := third.changedSince(first.seq, first.graph)
	assert.True(t, ok)
	assert.Equal(t, []int{1}, got)
	got, ok = third.changedSince(third.seq, third.graph)
	assert.True(t, ok)
	assert.Empty(t, got)

	src.set(func(f *fakeSource) {
		f.view.Components = append(f.view.Components, coordinator.ComponentView{Name: "ops", State: "pending"})
	})
	fourth := take()
	assert.NotSame(t, third.layout, fourth.layout, "a component added: a new layout")
	assert.Len(t, fourth.layout.Nodes, 5)
	assert.Equal(t, fourth.seq, fourth.graph)
	_, ok = fourth.changedSince(third.seq, third.graph)
	assert.False(t, ok, "a viewer of the old graph needs the whole board")

	// A snapshot keeps the changes of the last keepChanges snapshots: a
	// viewer further behind gets the whole board.
	var last *snapshot
	for i := range keepChanges + 1 {
		src.set(func(f *fakeSource) { f.view.Components[0].Progress = i })
		last = take()
	}
	assert.Len(t, last.recent, keepChanges)
	_, ok = last.changedSince(fourth.seq, fourth.graph)
	assert.False(t, ok)
	got, ok = last.changedSince(last.seq-keepChanges, last.graph)
	assert.True(t, ok)
	assert.Equal(t, []int{0}, got)
}

func TestSnapshotWaitsForNoViewerThatLeaves(t *testing.T) {
	src := &fakeSource{view: shopView(), health: healthy()}
	s := New(Options{})
	s.Attach(src)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sn := s.snapshotFor(ctx, want{gen: s.generation()})
	require.NotNil(t, sn.view, "a viewer gone is no reason to share a board without a view")
	assert.Empty(t, sn.problem)
}

func TestWholeBoardEventMatchesAPIView(t *testing.T) {
	src := &fakeSource{view: shopView(), health: healthy()}
	s := New(Options{Now: func() time.Time { return t0 }})
	s.Attach(src)
	s.Observe(heard(t0, "@b3", "ABORT web missing_dependency: no schema"),
		said(t0, protocol.Escalate("web", protocol.HardBlocker, "missing_dependency: no schema", "RESOLVE web")))
	s.Named("@b3", "carol")
	ts := newTestServer(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ev := openStream(t, ctx, ts.URL).next()
	var whole Board
	getJSON(t, ts.URL+"/api/view", &whole)
	assert.Equal(t, whole, ev, "the stream's hand-built whole board says what /api/view says")
	assert.Equal(t, map[string]string{"@b3": "carol"}, ev.Names)
}

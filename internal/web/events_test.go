package web

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/protocol"
)

// sseReader reads the board events of one stream.
type sseReader struct {
	t      *testing.T
	events chan Board
}

func openStream(t *testing.T, ctx context.Context, url string) *sseReader {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/events", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	r := &sseReader{t: t, events: make(chan Board, 64)}
	go func() {
		defer resp.Body.Close()
		defer close(r.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event == "board":
				var b Board
				if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &b) == nil {
					r.events <- b
				}
			case line == "":
				event = ""
			}
		}
	}()
	return r
}

// next waits for the next board event.
func (r *sseReader) next() Board {
	r.t.Helper()
	select {
	case b, ok := <-r.events:
		require.True(r.t, ok, "the stream ended")
		return b
	case <-time.After(10 * time.Second):
		r.t.Fatal("no board event within 10s")
		return Board{}
	}
}

// apply brings a board up to date with the next event of its stream, as
// the page does: a whole board replaces it, an update replaces the view's
// header and the components it carries.
func apply(t *testing.T, b *Board, ev Board) {
	t.Helper()
	if !ev.Update {
		*b = ev
		return
	}
	require.NotNil(t, b.View, "an update before any whole board")
	require.NotNil(t, ev.View, "an update without the view's header")
	assert.Empty(t, ev.View.Components, "an update's view has no components")
	assert.Nil(t, ev.Layout, "an update has no layout")
	v := *ev.View
	v.Components = slices.Clone(b.View.Components)
	for _, c := range ev.Changed {
		i := slices.IndexFunc(v.Components, func(o coordinator.ComponentView) bool { return o.Name == c.Name })
		require.GreaterOrEqual(t, i, 0, "an update of an unknown component %s", c.Name)
		v.Components[i] = c
	}
	layout := b.Layout
	*b = ev
	b.View, b.Layout, b.Changed = &v, layout, nil
}

func TestEventsDeliverUpdates(t *testing.T) {
	src := &fakeSource{view: shopView(), health: healthy()}
	s := New(Options{Refresh: time.Hour}) // only changes may cause events here
	s.Attach(src)
	s.Observe(tick(t0), said(t0, protocol.Tasks([]string{"db"})))
	ts := newTestServer(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := openStream(t, ctx, ts.URL)

	var board Board
	first := stream.next()
	apply(t, &board, first)
	assert.True(t, first.Full)
	assert.False(t, first.Update)
	require.NotNil(t, first.View)
	require.NotNil(t, first.Layout)
	assert.Equal(t, "building", first.View.Components[1].State)
	require.Len(t, first.Log, 1)

	src.set(func(f *fakeSource) { f.view.Components[1].State = "review" })
	s.Observe(heard(t0.Add(time.Second), "@b2", "READY api pr/7"), said(t0.Add(time.Second), protocol.Review("api", "@b2", "pr/7")))

	// The change and the log lines may come in one event or, when the
	// Observe fell between two reads, in two: read until both are seen.
	var lines []string
	var changed []string
	for state, _ := component(board, "api"); state != "review" || len(lines) < 2; state, _ = component(board, "api") {
		b := stream.next()
		assert.False(t, b.Full)
		assert.True(t, b.Update, "the graph is the same: an update")
		for _, c := range b.Changed {
			changed = append(changed, c.Name)
		}
		for _, e := range b.Log {
			lines = append(lines, e.Text)
		}
		apply(t, &board, b)
	}
	assert.Equal(t, []string{"READY api pr/7", "REVIEW api @b2 pr/7"}, lines, "only the new lines, each once")
	assert.Equal(t, []string{"api"}, changed, "only what changed")

	var whole Board
	require.Equal(t, http.StatusOK, getJSON(t, ts.URL+"/api/view", &whole))
	assert.Equal(t, whole.View, board.View, "the updates add up to the whole board")
	assert.Equal(t, whole.Layout, board.Layout)

	// A new dependency is a new graph: the whole board again, laid out anew.
	src.set(func(f *fakeSource) { f.view.Components[3].Deps = []string{"web", "api"} })
	s.Observe(heard(t0.Add(2*time.Second), "@op", "DEPEND docs api"),
		said(t0.Add(2*time.Second), protocol.OK(protocol.Command{Verb: protocol.Depend, Component: "docs", Dep: "api"})))
	for b := stream.next(); ; b = stream.next() {
		apply(t, &board, b)
		if !b.Update {
			require.NotNil(t, b.Layout)
			assert.Len(t, b.Layout.Edges, 4)
			require.Len(t, b.View.Components, 4)
			assert.Equal(t, []string{"web", "api"}, b.View.Components[3].Deps)
			assert.False(t, b.Full, "the log still comes as new lines only")
			break
		}
	}

	// A viewer that reconnects gets the whole board.
	again := openStream(t, ctx, ts.URL).next()
	assert.False(t, again.Update)
	assert.True(t, again.Full)
	assert.Len(t, again.Log, 5)
	assert.Equal(t, board.View, again.View)
}

func TestEventsShareOneViewPerChange(t *testing.T) {
	src := &fakeSource{view: shopView(), health: healthy()}
	s := New(Options{Refresh: time.Hour})
	s.Attach(src)
	ts := newTestServer(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var streams []*sseReader
	for range 5 {
		st := openStream(t, ctx, ts.URL)
		st.next()
		streams = append(streams, st)
	}
	before := src.views.Load()

	src.set(func(f *fakeSource) { f.view.Components[1].Progress = 55 })
	s.Observe(heard(t0.Add(time.Second), "@b2", "PROGRESS api 55"), nil)
	for _, st := range streams {
		b := st.next()
		require.True(t, b.Update)
		require.Len(t, b.Changed, 1)
		assert.Equal(t, 55, b.Changed[0].Progress)
	}
	assert.Equal(t, int64(1), src.views.Load()-before, "five viewers, one change: one View")
}

func TestEventsEndWithTheServer(t *testing.T) {
	s := New(Options{})
	s.Attach(&fakeSource{view: shopView(), health: healthy()})
	ctx, cancel := context.WithCancel(context.Background())
	ln := listen(t)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()

	streamCtx, stopStream := context.WithCancel(context.Background())
	defer stopStream()
	stream := openStream(t, streamCtx, "http://"+ln.Addr().String())
	stream.next()

	cancel()
	select {
	case err := <-served:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return with an open stream")
	}
	for range stream.events {
	}
}

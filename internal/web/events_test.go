package web

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentforeman/foreman/protocol"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

func TestEventsDeliverUpdates(t *testing.T) {
	src := &fakeSource{view: shopView(), health: healthy()}
	s := New(Options{Refresh: time.Hour}) // only changes may cause events here
	s.Attach(src)
	s.Observe(tick(t0), said(t0, protocol.Tasks([]string{"db"})))
	ts := newTestServer(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := openStream(t, ctx, ts.URL)

	first := stream.next()
	assert.True(t, first.Full)
	require.NotNil(t, first.View)
	assert.Equal(t, "building", first.View.Components[1].State)
	require.Len(t, first.Log, 1)

	src.set(func(f *fakeSource) { f.view.Components[1].State = "review" })
	s.Observe(heard(t0.Add(time.Second), "@b2", "READY api pr/7"), said(t0.Add(time.Second), protocol.Review("api", "@b2", "pr/7")))

	// The change and the log lines may come in one event or, when the
	// Observe fell between two reads, in two: read until both are seen.
	var lines []string
	state := ""
	for state != "review" || len(lines) < 2 {
		b := stream.next()
		assert.False(t, b.Full)
		require.NotNil(t, b.View)
		state = b.View.Components[1].State
		for _, e := range b.Log {
			lines = append(lines, e.Text)
		}
	}
	assert.Equal(t, []string{"READY api pr/7", "REVIEW api @b2 pr/7"}, lines, "only the new lines, each once")
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

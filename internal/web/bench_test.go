package web

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/bot"
)

// engineSource is a bot reduced to its engine, so that a benchmark pays
// the real cost of a View and nothing of a room.
type engineSource struct {
	mu  sync.Mutex
	eng *coordinator.Engine
}

func (e *engineSource) View(context.Context) (coordinator.View, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.eng.View(), nil
}

func (e *engineSource) Health() bot.Health         { return healthy() }
func (e *engineSource) RoomStats() agentchat.Stats { return agentchat.Stats{} }

// step hands the engine one event, as the bot does.
func (e *engineSource) step(ev coordinator.Event) []coordinator.Reply {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.eng.Step(ev)
}

// benchBuilders is how many components are being built in a benchmark's
// build; the rest wait.
const benchBuilders = 1000

// benchSource starts a build of n components with benchBuilders of them
// claimed. Flat means no dependencies (what `foreman bench` runs);
// otherwise the build is ten layers, each component needing two of the
// layer before, which makes a layout with many edges to uncross.
func benchSource(tb testing.TB, n int, flat bool) *engineSource {
	tb.Helper()
	comps := make([]coordinator.Component, n)
	layer := n / 10
	for i := range comps {
		comps[i].Name = fmt.Sprintf("c%d", i)
		if !flat && i >= layer {
			base := (i/layer - 1) * layer
			comps[i].Deps = []string{fmt.Sprintf("c%d", i-layer), fmt.Sprintf("c%d", base+(i*7)%layer)}
		}
	}
	rules := coordinator.DefaultRules()
	rules.MaxBuildTime = 0
	eng, err := coordinator.New(coordinator.Config{Build: "bench", Self: "@foreman", Components: comps, Rules: rules})
	if err != nil {
		tb.Fatal(err)
	}
	src := &engineSource{eng: eng}
	src.step(coordinator.Event{Kind: coordinator.KindStart, At: t0})
	for i := range benchBuilders {
		src.step(coordinator.Heard(coordinator.Message{From: fmt.Sprintf("@b%d", i), At: t0, Content: fmt.Sprintf("CLAIM c%d", i)}))
	}
	return src
}

// frameWriter is a viewer's connection: it reports each board event the
// server writes to it.
type frameWriter struct {
	h      http.Header
	frames chan<- int
}

func (w *frameWriter) Header() http.Header { return w.h }
func (w *frameWriter) WriteHeader(int)     {}
func (w *frameWriter) Flush()              {}

func (w *frameWriter) Write(p []byte) (int, error) {
	if bytes.HasPrefix(p, []byte("event: board")) {
		w.frames <- len(p)
	}
	return len(p), nil
}

// BenchmarkBoardUpdate is the board's cost of one change in a build of
// 10,000 components watched live: one builder's PROGRESS is handled, and
// every viewer is sent the board. An operation ends when every viewer has
// had its event, so it counts the whole work of the change, shared or not.
func BenchmarkBoardUpdate(b *testing.B) {
	saved := minEventGap
	minEventGap = 0 // the pause between events is not work
	defer func() { minEventGap = saved }()
	for _, shape := range []struct {
		name string
		flat bool
	}{{"flat", true}, {"layered", false}} {
		for _, viewers := range []int{1, 10} {
			b.Run(fmt.Sprintf("%s/viewers=%d", shape.name, viewers), func(b *testing.B) {
				benchBoardUpdate(b, 10000, shape.flat, viewers)
			})
		}
	}
}

func benchBoardUpdate(b *testing.B, n int, flat bool, viewers int) {
	src := benchSource(b, n, flat)
	s := New(Options{Refresh: time.Hour}) // only changes cause events
	s.Attach(src)
	ctx, cancel := context.WithCancel(context.Background())
	frames := make(chan int, viewers)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	for range viewers {
		r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/events", nil)
		w := &frameWriter{h: http.Header{}, frames: frames}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.serveEvents(w, r)
		}()
	}
	sent := 0
	await := func() {
		for range viewers {
			sent += <-frames
		}
	}
	await() // each viewer's first, whole board
	sent = 0

	at := t0
	i := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		at = at.Add(time.Millisecond) // no deadline comes due
		c := i % benchBuilders
		ev := coordinator.Heard(coordinator.Message{From: fmt.Sprintf("@b%d", c), At: at,
			Content: fmt.Sprintf("PROGRESS c%d %d", c, i/benchBuilders%99+1)})
		s.Observe(&ev, src.step(ev))
		await()
		i++
	}
	b.ReportMetric(float64(sent)/float64(i*viewers), "bytes/event")
}

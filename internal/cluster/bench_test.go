package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/journal"
	"github.com/agentforeman/foreman/internal/node"
	"github.com/agentforeman/foreman/internal/tooling/natstest"
)

// BenchmarkHeardLine is the cost of one line heard in the room and made
// durable, committed alone (the bot's worst case: a quiet room, one line per
// commit; a busy one groups many lines into a commit): the engine's work
// plus one append, to the local journal (a write and an fdatasync) or to the
// build's JetStream stream (a publish, acknowledged once the server stored
// it, on an in-process server with its store on this disk). lines/s is what
// one build can hear, one commit each; the ratio of the two ns/op is the
// price of the cluster.
func BenchmarkHeardLine(b *testing.B) {
	for _, per := range []int{1, 100} {
		b.Run(fmt.Sprintf("journal/per-commit=%d", per), func(b *testing.B) {
			j, err := journal.Open(b.TempDir(), journal.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			heardLines(b, j, per)
		})
		for _, sync := range []bool{false, true} {
			name := "jetstream"
			if sync {
				name = "jetstream-sync"
			}
			b.Run(fmt.Sprintf("%s/per-commit=%d", name, per), func(b *testing.B) { heardLinesJetStream(b, sync, per) })
		}
	}
}

// heardLinesJetStream is heardLines on a JetStream log: with the server's
// default store, which syncs to disk every two minutes (a cluster's
// replicas are its durability), or with sync_interval: always, which syncs
// every message as the journal does.
func heardLinesJetStream(b *testing.B, sync bool, per int) {
	srv := natstest.StartWith(b, func(o *server.Options) { o.SyncAlways = sync })
	c, err := Connect(context.Background(), Options{URL: srv.URL(), ID: "bench", Lease: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	w, err := c.WatchLeases(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	<-w.Ready()
	o, _ := w.Free("bench")
	l, err := c.Acquire(ctx, "bench", "", o)
	if err != nil {
		b.Fatal(err)
	}
	lg, err := c.OpenLog(ctx, l, false)
	if err != nil {
		b.Fatal(err)
	}
	heardLines(b, lg, per)
	_ = lg.Close()
}

// heardLines hears PROGRESS lines from 100 builders, per lines to a commit
// (the bot commits whatever it took from the room at once), and times the
// appends alone too (append-ns: per commit).
func heardLines(b *testing.B, st node.Storage, per int) {
	comps := make([]coordinator.Component, 100)
	for i := range comps {
		comps[i] = coordinator.Component{Name: fmt.Sprintf("c%d", i)}
	}
	n, err := node.Open(node.Config{Engine: coordinator.Config{Build: "bench", Self: "@foreman", Components: comps,
		Rules: coordinator.DefaultRules()}, Storage: st, SnapshotEvery: -1})
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n.Step(coordinator.Event{Kind: coordinator.KindStart, At: t0})
	for i := range comps {
		n.Hear(coordinator.Message{At: t0.Add(time.Millisecond), ID: fmt.Sprintf("claim%d", i), From: fmt.Sprintf("@b%d", i),
			Content: fmt.Sprintf("CLAIM c%d", i)})
	}
	if err := st.Append(n.Ready().Entries); err != nil {
		b.Fatal(err)
	}
	var appending time.Duration
	commits := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := i % len(comps)
		n.Hear(coordinator.Message{At: t0.Add(time.Second + time.Duration(i)*time.Millisecond), ID: fmt.Sprintf("m%d", i),
			From: fmt.Sprintf("@b%d", c), Content: fmt.Sprintf("PROGRESS c%d %d", c, i%100)})
		if (i+1)%per != 0 && i+1 < b.N {
			continue
		}
		rd := n.Ready()
		began := time.Now()
		if err := st.Append(rd.Entries); err != nil {
			b.Fatal(err)
		}
		appending += time.Since(began)
		commits++
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(float64(appending.Nanoseconds())/float64(commits), "append-ns")
}

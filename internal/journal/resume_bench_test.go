package journal

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/node"
)

// resumeConfig is a build of 1,000 independent components.
func resumeConfig() coordinator.Config {
	comps := make([]coordinator.Component, 1000)
	for i := range comps {
		comps[i] = coordinator.Component{Name: fmt.Sprintf("c%d", i)}
	}
	return coordinator.Config{Build: "resume", Self: "@foreman", Components: comps, Rules: coordinator.DefaultRules()}
}

// persist does what the bot does with a Ready, snapshot in the foreground.
func persist(b *testing.B, j *Journal, n *node.Node) {
	rd := n.Ready()
	if err := j.Append(rd.Entries); err != nil {
		b.Fatal(err)
	}
	if rd.Snapshot != nil {
		if err := j.SaveSnapshot(rd.Snapshot); err != nil {
			b.Fatal(err)
		}
	}
}

// writeJournal fills a journal with events: the build starts, every
// component is claimed, then heartbeats come in round-robin, one a
// millisecond, committed a thousand at a time as a busy room would be.
func writeJournal(b *testing.B, dir string, events, snapEvery int) {
	b.Helper()
	j, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	n, err := node.Open(node.Config{Engine: resumeConfig(), Storage: j, SnapshotEvery: snapEvery})
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n.Step(coordinator.Event{Kind: coordinator.KindStart, At: t0})
	for i := 1; i < events; i++ {
		comp := (i - 1) % 1000
		text := fmt.Sprintf("PROGRESS c%d %d", comp, i%100)
		if i <= 1000 {
			text = fmt.Sprintf("CLAIM c%d", comp)
		}
		n.Hear(coordinator.Message{At: t0.Add(time.Duration(i) * time.Millisecond),
			ID: fmt.Sprintf("m%d", i), From: fmt.Sprintf("@b%d", comp), Content: text})
		if i%1000 == 0 {
			persist(b, j, n)
		}
	}
	persist(b, j, n)
}

// BenchmarkResume is how long foreman takes to resume from a journal of
// 1,000,000 events: open it, restore the latest snapshot and replay the
// events after it. Without snapshots every event is replayed.
func BenchmarkResume(b *testing.B) {
	const events = 1000000
	for _, tc := range []struct {
		name      string
		snapEvery int
	}{{"snapshot-every-1000", 1000}, {"no-snapshots", -1}} {
		b.Run(tc.name, func(b *testing.B) {
			dir := b.TempDir()
			writeJournal(b, dir, events, tc.snapEvery)
			for b.Loop() {
				j, err := Open(dir, Options{})
				if err != nil {
					b.Fatal(err)
				}
				n, err := node.Open(node.Config{Engine: resumeConfig(), Storage: j, SnapshotEvery: -1})
				if err != nil {
					b.Fatal(err)
				}
				if !n.Started() {
					b.Fatal("not started")
				}
				j.Close()
			}
			b.ReportMetric(float64(events), "events")
		})
	}
}

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

// BenchmarkSnapshot100k is what a snapshot of a build of 100,000 busy
// components costs: taking it, in the bot's loop (the engine's state copied
// out), and writing it, in the background (encoded, written, synced).
func BenchmarkSnapshot100k(b *testing.B) {
	comps := make([]coordinator.Component, 100000)
	for i := range comps {
		comps[i] = coordinator.Component{Name: fmt.Sprintf("c%d", i)}
	}
	cfg := coordinator.Config{Build: "big", Self: "@foreman", Components: comps, Rules: coordinator.DefaultRules()}
	n, err := node.Open(node.Config{Engine: cfg, SnapshotEvery: -1})
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n.Step(coordinator.Event{Kind: coordinator.KindStart, At: t0})
	for i := range comps {
		n.Hear(coordinator.Message{ID: fmt.Sprint(i), From: fmt.Sprintf("@b%d", i), At: t0.Add(time.Millisecond),
			Content: fmt.Sprintf("CLAIM c%d\nPROGRESS c%d 40 halfway", i, i)})
	}
	n.Ready()
	n.ConfirmRanges([]node.Range{{From: 1, To: n.Produced()}}, "echo", t0.Add(time.Second)) // the room has every reply
	n.Ready()
	b.Run("take-in-the-loop", func(b *testing.B) {
		for b.Loop() {
			n.Snapshot()
		}
	})
	b.Run("write-in-the-background", func(b *testing.B) {
		j, err := Open(b.TempDir(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer j.Close()
		s := n.Snapshot()
		for b.Loop() {
			if err := j.writeSnapshot(s); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkJournaledLines is the bot's pipeline without the network: heard
// lines through the engine, committed to the journal (one fdatasync per
// commit) in batches as the bot takes them from its queue. lines/s is what
// foreman can sustain with the journal on, per batch size.
func BenchmarkJournaledLines(b *testing.B) {
	for _, batch := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("batch-%d", batch), func(b *testing.B) {
			j, err := Open(b.TempDir(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			n, err := node.Open(node.Config{Engine: resumeConfig(), Storage: j})
			if err != nil {
				b.Fatal(err)
			}
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			n.Step(coordinator.Event{Kind: coordinator.KindStart, At: t0})
			for i := range 1000 {
				n.Hear(coordinator.Message{ID: fmt.Sprint("c", i), From: fmt.Sprintf("@b%d", i), At: t0, Content: fmt.Sprintf("CLAIM c%d", i)})
			}
			persist(b, j, n)
			lines := 0
			for b.Loop() {
				for k := range batch {
					lines++
					c := lines % 1000
					n.Hear(coordinator.Message{ID: fmt.Sprint(lines), From: fmt.Sprintf("@b%d", c), At: t0.Add(time.Duration(lines) * time.Microsecond),
						Content: fmt.Sprintf("PROGRESS c%d %d", c, k%100)})
				}
				persist(b, j, n)
			}
			b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}

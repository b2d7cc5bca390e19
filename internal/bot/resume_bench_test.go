package bot

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/journal"
)

// resumeConfig is a build of 1,000 independent components.
func resumeConfig() coordinator.Config {
	comps := make([]coordinator.Component, 1000)
	for i := range comps {
		comps[i] = coordinator.Component{Name: fmt.Sprintf("c%d", i)}
	}
	return coordinator.Config{Build: "resume", Self: "@foreman", Components: comps, Rules: coordinator.DefaultRules()}
}

// writeJournal fills a journal with events: the build starts, every
// component is claimed, then heartbeats come in round-robin, one a
// millisecond, committed a thousand at a time as a busy room would be.
func writeJournal(b *testing.B, path string, events, snapEvery int) {
	b.Helper()
	j, err := journal.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	c, err := openCore(resumeConfig(), j, snapEvery)
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c.apply(&journal.Event{Kind: journal.Start, At: t0.UnixMilli()})
	for i := 1; i < events; i++ {
		comp := (i - 1) % 1000
		text := fmt.Sprintf("PROGRESS c%d %d", comp, i%100)
		if i <= 1000 {
			text = fmt.Sprintf("CLAIM c%d", comp)
		}
		c.apply(&journal.Event{Kind: journal.Message, At: t0.Add(time.Duration(i) * time.Millisecond).UnixMilli(),
			ID: fmt.Sprintf("m%d", i), From: fmt.Sprintf("@b%d", comp), Content: text})
		if i%1000 == 0 {
			if _, err := c.commit(); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := c.commit(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkResume is how long foreman takes to resume from a journal of
// 1,000,000 events: open it, restore the latest snapshot and replay the
// events after it. Without snapshots every event is replayed.
func BenchmarkResume(b *testing.B) {
	const events = 1000000
	for _, tc := range []struct {
		name      string
		snapEvery int
	}{{"snapshot-every-1000", 1000}, {"no-snapshots", 0}} {
		b.Run(tc.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "journal.db")
			writeJournal(b, path, events, tc.snapEvery)
			var replayed int
			for b.Loop() {
				j, err := journal.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				snap, _ := j.LoadSnapshot()
				replayed = int(j.Last())
				if snap != nil {
					replayed -= int(snap.Seq)
				}
				c, err := openCore(resumeConfig(), j, 0)
				if err != nil {
					b.Fatal(err)
				}
				if at, _ := c.eng.StartedAt(); at.IsZero() {
					b.Fatal("not started")
				}
				j.Close()
			}
			b.ReportMetric(float64(events), "events")
			b.ReportMetric(float64(replayed), "replayed")
		})
	}
}

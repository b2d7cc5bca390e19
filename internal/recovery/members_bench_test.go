package recovery

import (
	"fmt"
	"testing"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/journal"
	"github.com/agentforeman/foreman/internal/node"
)

// BenchmarkJoinedList10kJournaled is a JOINED list of 10,000 members new
// to foreman, as the bot hands it over: sorted out by the engine, stepped
// in events of 1,000, and committed to a real journal (one write, one
// fdatasync). The bytes it reports are the records' per list (segments
// are preallocated, so their size does not show it).
func BenchmarkJoinedList10kJournaled(b *testing.B) {
	list := make([]agentchat.Agent, 10000)
	for i := range list {
		list[i] = agentchat.Agent{ID: fmt.Sprintf("@%016x", 0x5d1e0c9a00000000+uint64(i)), Name: fmt.Sprintf("agent-%d", i)}
	}
	var size int64
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		j, err := journal.Open(dir, journal.Options{})
		if err != nil {
			b.Fatal(err)
		}
		s, err := Open(Config{Node: node.Config{Engine: engine("db"), Storage: j, SnapshotEvery: -1}, Build: "shop", History: 20,
			Instance: func() string { return "abc123" }})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Join(Join{At: t0, Created: true}); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Commit(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		s.Members(list...)
		rd, err := s.Commit()
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if len(rd.Entries) != 10 {
			b.Fatalf("%d entries", len(rd.Entries))
		}
		size = 0
		for _, e := range rd.Entries {
			rec, err := journal.EncodeEntry(e)
			if err != nil {
				b.Fatal(err)
			}
			size += int64(len(rec))
		}
		j.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(size), "journal-bytes/list")
}

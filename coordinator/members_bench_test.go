package coordinator

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// roomOf is a member list of n, as a stock room gives it on joining: ids
// of @ and 16 hex digits, short names, none verified.
func roomOf(n int) []Member {
	ms := make([]Member, n)
	for i := range ms {
		ms[i] = Member{ID: fmt.Sprintf("@%016x", 0x5d1e0c9a00000000+uint64(i)), Name: fmt.Sprintf("agent-%d", i)}
	}
	return ms
}

// stepMembers hands ms to the engine as a shell does: what is new, in
// events of at most MaxMembers. It returns the events it took.
func stepMembers(e *Engine, ms []Member, at time.Time) int {
	events := 0
	for ms = e.NewMembers(ms); len(ms) > 0; events++ {
		n := min(len(ms), MaxMembers)
		e.Step(Event{Kind: KindMembers, At: at, Members: ms[:n:n]})
		ms = ms[n:]
	}
	return events
}

// BenchmarkJoinedList10k is a JOINED list of 10,000 members the engine has
// never seen, through the engine: sorted out (NewMembers), then taken in
// ten events of 1,000.
func BenchmarkJoinedList10k(b *testing.B) {
	list := roomOf(10000)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		e := benchBuild(b, 10)
		b.StartTimer()
		if n := stepMembers(e, list, t0); n != 10 {
			b.Fatalf("%d events", n)
		}
	}
}

// BenchmarkJoinedListKnown10k is the same list shown again (a reconnect, a
// restart): sorted out, nothing to step or journal. It reports what the
// 10,000 add to a snapshot, encoded as the journal encodes it.
func BenchmarkJoinedListKnown10k(b *testing.B) {
	list := roomOf(10000)
	e := benchBuild(b, 10)
	without, err := json.Marshal(e.Snapshot())
	if err != nil {
		b.Fatal(err)
	}
	stepMembers(e, list, t0)
	with, err := json.Marshal(e.Snapshot())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if n := stepMembers(e, list, t0); n != 0 {
			b.Fatalf("%d events", n)
		}
	}
	b.ReportMetric(float64(len(with)-len(without)), "snapshot-bytes")
}

// BenchmarkAssignAmong10k is an operator's ASSIGN to a member who never
// spoke, in a room of 10,000, and the REJECT of a display name typed as an
// id (which looks through every name).
func BenchmarkAssignAmong10k(b *testing.B) {
	e := benchBuild(b, 10)
	e.cfg.Roles.Operators = []string{"@op"}
	e.roles = newRoles(e.cfg.Roles)
	list := roomOf(10000)
	stepMembers(e, list, t0)
	assign := Message{From: "@op", Verified: true, At: t0, Content: "ASSIGN c0 " + list[9999].ID + "\nASSIGN c1 @agent-5"}
	b.ReportAllocs()
	for b.Loop() {
		assign.At = assign.At.Add(time.Millisecond)
		if out := e.Step(Heard(assign)); len(out) != 3 {
			b.Fatalf("%v", Texts(out))
		}
	}
}

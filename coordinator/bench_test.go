package coordinator

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// benchBuild is a build of n independent components, started.
func benchBuild(b *testing.B, n int) *Engine {
	b.Helper()
	comps := make([]Component, n)
	for i := range comps {
		comps[i] = Component{Name: fmt.Sprintf("c%d", i)}
	}
	rules := DefaultRules()
	rules.MaxBuildTime = 0
	e, err := New(Config{Build: "bench", Self: "@foreman", Components: comps, Rules: rules,
		Roles: Roles{Auditors: []string{"@aud"}}})
	if err != nil {
		b.Fatal(err)
	}
	e.Start(t0)
	return e
}

// BenchmarkHandle is one component's life through the engine: CLAIM (ACK),
// PROGRESS, READY (REVIEW), AUDIT PASS (MERGED), as typed commands.
func BenchmarkHandle(b *testing.B) {
	const pool = 10000
	cmds := make([][4]protocol.Command, pool)
	agents := make([]string, pool)
	for i := range cmds {
		c := fmt.Sprintf("c%d", i)
		cmds[i] = [4]protocol.Command{
			{Verb: protocol.Claim, Component: c},
			{Verb: protocol.Progress, Component: c, Percent: 50},
			{Verb: protocol.Ready, Component: c, PR: "pr/1"},
			{Verb: protocol.Audit, Component: c, Verdict: protocol.Pass},
		}
		agents[i] = fmt.Sprintf("@b%d", i%64)
	}
	e := benchBuild(b, pool)
	now := t0
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == pool {
			b.StopTimer()
			e, i, now = benchBuild(b, pool), 0, t0
			b.StartTimer()
		}
		now = now.Add(time.Second)
		e.Handle(now, agents[i], cmds[i][0])
		e.Handle(now, agents[i], cmds[i][1])
		e.Handle(now, agents[i], cmds[i][2])
		e.Handle(now, "@aud", cmds[i][3])
		i++
	}
}

// BenchmarkProgress is the steady state: an owner's heartbeat, read from
// text and handled, among 100,000 components with timers running.
func BenchmarkProgress(b *testing.B) {
	const n = 100000
	e := benchBuild(b, n)
	for i := 0; i < n; i++ {
		e.Receive(Message{From: fmt.Sprintf("@b%d", i), At: t0, Content: fmt.Sprintf("CLAIM c%d", i)})
	}
	lines := make([]Message, 1000)
	for i := range lines {
		lines[i] = Message{From: fmt.Sprintf("@b%d", i*97), Content: fmt.Sprintf("PROGRESS c%d 50", i*97)}
	}
	now := t0
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		now = now.Add(time.Microsecond) // no deadline passes: the steady state
		m := lines[i%len(lines)]
		m.At = now
		if out := e.Receive(m); out != nil {
			b.Fatal(out)
		}
		i++
	}
}

// BenchmarkClaimToAck is one CLAIM read from text and answered with ACK.
func BenchmarkClaimToAck(b *testing.B) {
	const pool = 100000
	msgs := make([]Message, pool)
	for i := range msgs {
		msgs[i] = Message{From: fmt.Sprintf("@b%d", i), Content: fmt.Sprintf("CLAIM c%d", i)}
	}
	e := benchBuild(b, pool)
	now := t0
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == pool {
			b.StopTimer()
			e, i = benchBuild(b, pool), 0
			b.StartTimer()
		}
		now = now.Add(time.Millisecond)
		m := msgs[i]
		m.At = now
		if out := e.Receive(m); len(out) != 1 {
			b.Fatal(out)
		}
		i++
	}
}

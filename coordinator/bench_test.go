package coordinator

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// benchBuild is a build of n independent components, started.
func benchBuild(b testing.TB, n int) *Engine {
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
	e.doStart(t0)
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
		e.doHandle(now, agents[i], cmds[i][0])
		e.doHandle(now, agents[i], cmds[i][1])
		e.doHandle(now, agents[i], cmds[i][2])
		e.doHandle(now, "@aud", cmds[i][3])
		i++
	}
}

// BenchmarkProgress is the steady state: an owner's heartbeat, read from
// text and handled, among 100,000 components with timers running.
func BenchmarkProgress(b *testing.B) {
	const n = 100000
	e := benchBuild(b, n)
	for i := 0; i < n; i++ {
		e.doReceive(Message{From: fmt.Sprintf("@b%d", i), At: t0, Content: fmt.Sprintf("CLAIM c%d", i)})
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
		if out := e.doReceive(m); out != nil {
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
		if out := e.doReceive(m); len(out) != 1 {
			b.Fatal(out)
		}
		i++
	}
}

// lifecycleStream is the text of a build of n components done 100 at a
// time by 100 agents: CLAIM, eight PROGRESS, READY, AUDIT PASS each, as the
// room would deliver them. It is what a replay or a busy room feeds the
// engine.
func lifecycleStream(n int) []Message {
	const agents = 100
	var out []Message
	add := func(from, text string) { out = append(out, Message{From: from, Content: text}) }
	for block := 0; block < n/agents; block++ {
		step := func(f func(c, a string)) {
			for j := 0; j < agents; j++ {
				f(fmt.Sprintf("c%d", block*agents+j), fmt.Sprintf("@b%d", j))
			}
		}
		step(func(c, a string) { add(a, "CLAIM "+c) })
		for p := 1; p <= 8; p++ {
			step(func(c, a string) { add(a, fmt.Sprintf("PROGRESS %s %d working", c, p*11)) })
		}
		step(func(c, a string) { add(a, "READY "+c+" https://git.example/pr/"+c) })
		step(func(c, _ string) { add("@aud", "AUDIT "+c+" PASS") })
	}
	return out
}

// BenchmarkLines is lines read and handled per second: the parse and step
// cost of a replay or a busy room (make bench runs it with -cpu 1 too).
func BenchmarkLines(b *testing.B) {
	const n = 10000
	stream := lifecycleStream(n)
	e := benchBuild(b, n)
	now := t0
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == len(stream) {
			b.StopTimer()
			e, i = benchBuild(b, n), 0
			b.StartTimer()
		}
		now = now.Add(time.Millisecond)
		m := stream[i]
		m.At = now
		e.doReceive(m)
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkMemoryPerComponent builds 100,000 components owned by 10,000
// agents (ten each), every one with its check-in timer running, and reports
// the heap it takes per component.
func BenchmarkMemoryPerComponent(b *testing.B) {
	const n, agents = 100000, 10000
	claims := make([]Message, n)
	for i := range claims {
		claims[i] = Message{From: fmt.Sprintf("@agent%d", i%agents), Content: fmt.Sprintf("CLAIM c%d", i)}
	}
	var perComponent float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		comps := make([]Component, n)
		for i := range comps {
			comps[i] = Component{Name: fmt.Sprintf("c%d", i)}
		}
		rules := DefaultRules()
		rules.MaxClaimsPerAgent = 10
		e, err := New(Config{Build: "mem", Self: "@foreman", Components: comps, Rules: rules})
		if err != nil {
			b.Fatal(err)
		}
		e.doStart(t0)
		for i, m := range claims {
			m.At = t0.Add(time.Duration(i) * time.Microsecond)
			if out := e.doReceive(m); len(out) != 1 {
				b.Fatalf("claim %d: %q", i, out)
			}
		}
		if got := len(e.timers); got != n+1 {
			b.Fatalf("%d timers armed, want %d", got, n+1)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perComponent = float64(after.HeapAlloc-before.HeapAlloc) / n
		runtime.KeepAlive(e)
		runtime.KeepAlive(comps)
	}
	b.ReportMetric(perComponent, "B/component")
}

// armedBuild is n components, each owned and with its check-in timer
// running; the deadlines are spread one millisecond apart.
func armedBuild(b testing.TB, n int) *Engine {
	b.Helper()
	e := benchBuild(b, n)
	for i := 0; i < n; i++ {
		e.doReceive(Message{From: fmt.Sprintf("@b%d", i), At: t0.Add(time.Duration(i) * time.Millisecond), Content: fmt.Sprintf("CLAIM c%d", i)})
	}
	return e
}

// BenchmarkAdvanceIdle moves the clock with 100,000 timers armed and none
// due: what every tick of a quiet room costs.
func BenchmarkAdvanceIdle(b *testing.B) {
	e := armedBuild(b, 100000)
	now := t0.Add(100 * time.Second)
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Nanosecond)
		if out := e.doAdvance(now); out != nil {
			b.Fatal(out)
		}
	}
}

// BenchmarkMassTimeout is 10,000 builders, claimed a millisecond apart,
// all missing their check-ins: every TIMEOUT and the TASKS that follow.
// tasks-bytes/op is what the room is told about the freed components.
func BenchmarkMassTimeout(b *testing.B) {
	const n = 10000
	var tasks int
	for b.Loop() {
		b.StopTimer()
		e := armedBuild(b, n)
		b.StartTimer()
		tasks = 0
		for {
			_, out, ok := e.doTick(t0.Add(24 * time.Hour))
			if !ok {
				break
			}
			for _, l := range out {
				if strings.HasPrefix(l, "TASKS ") {
					tasks += len(l)
				}
			}
		}
	}
	b.ReportMetric(float64(tasks), "tasks-bytes/op")
}

// BenchmarkSpendRequest is one request's spend through the engine: an
// agent holding a component, each request with its own identity (so the
// engine looks through the agent's last maxRequestIDs), placed, counted
// and held against a budget. A round of the bot's loop takes at most 256
// exports of at most 1,024 points each (docs/BUDGETS.md).
func BenchmarkSpendRequest(b *testing.B) {
	e := benchBuild(b, 1)
	e.cfg.Budgets.Component = Limit{USD: maxSpend, HasUSD: true}
	e.doReceive(msg("@b1", "CLAIM c0", time.Second))
	ids := make([]string, 4096)
	for i := range ids {
		ids[i] = fmt.Sprintf("%016x", i)
	}
	for i := 0; b.Loop(); i++ {
		e.Step(Event{Kind: KindSpend, At: at(2 * time.Second), Spend: Spend{Agent: "@b1", Source: SpendRequest,
			At: at(2 * time.Second), ID: ids[i%len(ids)], Cost: Cost{USD: 1000, Tokens: 100}}})
	}
}

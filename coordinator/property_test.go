package coordinator

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// chooser is where random choices come from: a seeded generator in the
// property test, the fuzzer's bytes in FuzzEngine.
type chooser interface{ intn(n int) int }

type seeded struct{ r *rand.Rand }

func (s seeded) intn(n int) int { return s.r.IntN(n) }

type fuzzBytes struct {
	data []byte
	i    int
}

func (f *fuzzBytes) intn(n int) int {
	if f.i >= len(f.data) {
		return 0
	}
	b := int(f.data[f.i])
	f.i++
	return b % n
}

func (f *fuzzBytes) done() bool { return f.i >= len(f.data) }

// world is a small build with every role, driven by random events.
type world struct {
	e      *Engine
	now    time.Duration
	agents []string
}

var (
	propComponents = []Component{
		{Name: "db"}, {Name: "auth", Deps: []string{"db"}}, {Name: "api", Deps: []string{"db", "auth"}},
		{Name: "web", Deps: []string{"api"}}, {Name: "docs"},
	}
	builders = []string{"@b1", "@b2", "@b3", "@b4"}
)

func newWorld(rules Rules) (*world, error) {
	e, err := New(Config{
		Build: "prop", Self: "@foreman", Mentions: []string{"@foreman"},
		Components: propComponents,
		Roles:      Roles{Operators: []string{"@op"}, Auditors: []string{"@aud"}, CI: []string{"@ci"}, Merger: []string{"@gh"}},
		Rules:      rules,
	})
	if err != nil {
		return nil, err
	}
	return &world{e: e, agents: append(append([]string{}, builders...), "@op", "@aud", "@ci", "@gh")}, nil
}

func pick[T any](c chooser, list []T) T { return list[c.intn(len(list))] }

// line makes a random protocol line: mostly well-formed and from someone
// entitled to say it, so that the build gets somewhere; sometimes not.
func (w *world) line(c chooser) (sender, text string) {
	comp := w.component(c)
	other := w.component(c)
	sender = pick(c, w.agents)
	owner := sender
	if cc, ok := w.e.graph.Index(comp); ok && w.e.comps[cc].owner != "" && c.intn(5) > 0 {
		owner = w.e.comps[cc].owner
	}
	switch r := c.intn(104); {
	case r < 14:
		return pick(c, builders), "CLAIM " + comp
	case r < 30:
		note := pick(c, []string{"", "", " branch=" + owner[1:] + "/" + comp, " branch=b1/" + comp + " wip", " branch=-x", " branch=a..b"})
		return owner, fmt.Sprintf("PROGRESS %s %d%s", comp, c.intn(101), note)
	case r < 34:
		return owner, "BLOCKED " + comp + " " + other
	case r < 37:
		return owner, "CONFLICT " + comp + " " + other + " " + pick(c, []string{"files", "files", "interface"})
	case r < 49:
		return owner, "READY " + comp + " pr/" + comp
	case r < 52:
		return owner, "ABORT " + comp + " " + pick(c, []string{"timeout", "invalid_specification x", "phase_incomplete", "strategy_failed: y", "tired"})
	case r < 68:
		return pick(c, []string{"@aud", "@aud", "@aud", sender}), "AUDIT " + w.inReview(c, comp) + " " + pick(c, []string{"PASS", "FAIL bad", "FAIL", "FAIL"})
	case r < 74:
		return pick(c, []string{"@ci", "@ci", sender}), "CI " + comp + " " + pick(c, []string{"PASS", "FAIL", "CONFLICT"})
	case r < 77:
		return sender, pick(c, []string{"STATUS", "STATUS " + comp})
	case r < 80:
		return "@op", "ASSIGN " + comp + " " + pick(c, builders)
	case r < 82:
		return pick(c, []string{"@op", sender}), "RELEASE " + comp
	case r < 85:
		return "@op", "RESOLVE " + comp + " ok"
	case r < 87:
		return "@op", "OVERRIDE " + comp
	case r < 88:
		return pick(c, []string{"@op", "@gh", sender}), "MERGED " + comp
	case r < 91:
		return "@op", pick(c, []string{"DEPEND ", "UNDEPEND "}) + comp + " " + other
	case r < 92:
		return "@op", "ADD " + pick(c, []string{"cache", "queue", "search"}) + " " + other
	case r < 94:
		return pick(c, []string{"@op", sender}), pick(c, []string{"PAUSE", "RESUME", "RESUME"})
	case r >= 100:
		return pick(c, []string{"@ci", "@ci", "@ci", sender}), "OVERLAP " + comp + " " + pick(c, []string{other, other, comp}) + " src/shared.go"
	}
	return sender, pick(c, []string{"PROGRESS " + comp + " 500", "CLAIM", "> CLAIM " + comp, "hello", "**READY** " + comp + " x", "AUDIT " + comp})
}

// component picks a component name: mostly one of the build's, sometimes one
// it does not have.
func (w *world) component(c chooser) string {
	if c.intn(10) == 0 {
		return pick(c, []string{"nope", "cache", "d b"})
	}
	return pick(c, w.e.comps).name
}

// inReview prefers a component in review, where an AUDIT means something.
func (w *world) inReview(c chooser, fallback string) string {
	var names []string
	for _, x := range w.e.comps {
		if x.state == Review {
			names = append(names, x.name)
		}
	}
	if len(names) == 0 || c.intn(4) == 0 {
		return fallback
	}
	return pick(c, names)
}

// step makes one random event: a message at a later time, or the clock
// running on. Before an OVERLAP the clock is run on first, so that what
// the line alone did can be checked (overlapChanged).
func (w *world) step(c chooser) (string, []string, error) {
	w.now += []time.Duration{0, time.Second, time.Minute, 7 * time.Minute, 31 * time.Minute}[c.intn(5)]
	at := t0.Add(w.now)
	if c.intn(6) == 0 {
		return "advance", w.e.doAdvance(at), nil
	}
	sender, text := w.line(c)
	event := sender + " " + text
	if !strings.HasPrefix(text, "OVERLAP ") {
		return event, w.e.doReceive(Message{From: sender, Verified: true, At: at, Content: text}), nil
	}
	before := w.e.doAdvance(at)
	was := w.holdings()
	out := w.e.doReceive(Message{From: sender, Verified: true, At: at, Content: text})
	return event, append(before, out...), w.overlapChanged(was, out)
}

// holding is what an OVERLAP must leave alone: who owns a component, and
// its deadline; with rules.overlap warn, its state too.
type holding struct {
	owner string
	state State
	timer timerKind
	at    time.Time
}

func (w *world) holdings() map[string]holding {
	m := map[string]holding{}
	for _, c := range w.e.comps {
		m[c.name] = holding{c.owner, c.state, c.timer.kind, c.timer.at}
	}
	return m
}

// overlapChanged checks what an OVERLAP did (contract section 10): it never
// changes an owner or a check-in deadline; with warn it changes no state
// and says nothing but a refusal; with wait the one change is c going from
// building to blocked, with a WAIT.
func (w *world) overlapChanged(was map[string]holding, out []string) error {
	for _, c := range w.e.comps {
		b, a := was[c.name], holding{c.owner, c.state, c.timer.kind, c.timer.at}
		if b.owner != a.owner || b.timer != a.timer || !b.at.Equal(a.at) {
			return fmt.Errorf("OVERLAP changed %s: %+v -> %+v", c.name, b, a)
		}
		if b.state != a.state && (w.e.rules.Overlap != OverlapWait || b.state != Building || a.state != Blocked) {
			return fmt.Errorf("OVERLAP (%s) moved %s from %s to %s", w.e.rules.Overlap, c.name, b.state, a.state)
		}
	}
	for _, line := range out {
		verb := strings.Fields(line)[0]
		if verb == "REJECT" || verb == "ERROR" || verb == "WAIT" && w.e.rules.Overlap == OverlapWait {
			continue
		}
		return fmt.Errorf("OVERLAP (%s) said %q", w.e.rules.Overlap, line)
	}
	return nil
}

// run drives a world through events from c, checking the invariants after
// every one. It stops at the first violation.
func run(c chooser, steps int, more func() bool) error {
	rules := DefaultRules()
	rules.CIGating = c.intn(2) == 0
	rules.AuditAttempts = 1 + c.intn(3)
	rules.MaxBuilders = 1 + c.intn(3)
	rules.PushbackRetries = c.intn(3)
	rules.CIAttempts = 1 + c.intn(3)
	rules.ConflictAttempts = 1 + c.intn(2)
	if c.intn(2) == 0 {
		rules.Merge = MergeExternal
	}
	if c.intn(2) == 0 {
		rules.Overlap = OverlapWait
	}
	w, err := newWorld(rules)
	if err != nil {
		return err
	}
	w.e.doStart(t0)
	merged := map[string]bool{}
	for i := 0; i < steps && more(); i++ {
		barred := w.barredNow()
		event, out, err := w.step(c)
		if err == nil {
			err = w.check(event, out, barred, merged)
		}
		if err != nil {
			return fmt.Errorf("step %d (%s): %w\nreplies: %q", i, event, err, out)
		}
	}
	return nil
}

// barredNow records, before an event, who is barred from what.
func (w *world) barredNow() map[string]bool {
	b := map[string]bool{}
	for _, c := range w.e.comps {
		for _, a := range c.barred {
			b[c.name+" "+a] = true
		}
	}
	return b
}

func (w *world) check(event string, out []string, barredBefore, merged map[string]bool) error {
	for _, line := range out {
		if strings.ContainsAny(line, "\r\n\u2028\u2029\u0085") {
			return fmt.Errorf("reply breaks the line: %q", line)
		}
		// A barred builder never gets ACK for that component, unless an
		// operator assigned it explicitly.
		if f := strings.Fields(line); f[0] == "ACK" && barredBefore[f[1]+" "+f[2]] &&
			!strings.Contains(event, "ASSIGN "+f[1]+" "+f[2]) {
			return fmt.Errorf("barred builder ACKed: %q", line)
		}
	}
	e := w.e
	owned := map[string]int{}
	for _, c := range e.comps {
		if merged[c.name] && (c.state != Merged || c.owner != "") {
			return fmt.Errorf("%s was merged and changed: %s owner=%q", c.name, c.state, c.owner)
		}
		if c.state == Merged {
			merged[c.name] = true
		}
		if c.owner != "" {
			owned[c.owner]++
		}
		if err := e.checkComponent(c); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	for agent, n := range owned {
		if e.owned[agent] != n {
			return fmt.Errorf("%s owns %d, counted %d", agent, n, e.owned[agent])
		}
	}
	if len(owned) != len(e.owned) {
		return fmt.Errorf("owned counts %v, owners %v", e.owned, owned)
	}
	n := 0
	for _, c := range e.comps {
		if c.state == Merged {
			n++
		}
	}
	if n != e.merged {
		return fmt.Errorf("%d merged, counted %d", n, e.merged)
	}
	return nil
}

// checkComponent checks what must hold of one component between events.
func (e *Engine) checkComponent(c *component) error {
	r := e.rules
	switch {
	case c.owner == "" && (c.state == Building || c.state == Blocked || c.state == InCI || c.state == Review):
		return fmt.Errorf("%s without an owner", c.state)
	case c.owner != "" && (c.state == Pending || c.state == Merged):
		return fmt.Errorf("%s with owner %s", c.state, c.owner)
	case (c.state == Blocked) != (len(c.waits) > 0):
		return fmt.Errorf("%s with %d waits", c.state, len(c.waits))
	case c.hold != "" && c.state != Held, c.hold == "" && c.state == Held:
		return fmt.Errorf("state %s with hold %q", c.state, c.hold)
	case e.pending.has(c.idx) != (c.state == Pending):
		return fmt.Errorf("%s but pending bit %v", c.state, e.pending.has(c.idx))
	case len(c.barred) > r.MaxBuilders:
		return fmt.Errorf("%d barred, limit %d", len(c.barred), r.MaxBuilders)
	case c.ciFails > r.CIAttempts || c.ciConflict > r.ConflictAttempts:
		return fmt.Errorf("CI counts %d/%d, %d/%d", c.ciFails, r.CIAttempts, c.ciConflict, r.ConflictAttempts)
	}
	for _, a := range c.fails {
		if a.n > r.AuditAttempts {
			return fmt.Errorf("%s failed %d audits, limit %d", a.agent, a.n, r.AuditAttempts)
		}
	}
	for d, n := range c.pushback {
		if n > r.PushbackRetries+1 {
			return fmt.Errorf("pushback on %s %d, limit %d", e.comps[d].name, n, r.PushbackRetries)
		}
	}
	wantTimer := map[State]timerKind{Building: checkinTimer, Blocked: checkinTimer, InCI: ciTimer, Review: auditTimer}[c.state]
	if c.state == Review && (c.overdue || c.approved) {
		wantTimer = noTimer
	}
	if got := c.timer.kind; got != wantTimer || c.timer.armed() != (wantTimer != noTimer) {
		return fmt.Errorf("%s with timer %q armed=%v", c.state, timerWhat[got], c.timer.armed())
	}
	unmerged := 0
	for _, d := range e.graph.Deps(c.idx) {
		if e.comps[d].state != Merged {
			unmerged++
		}
	}
	if unmerged != c.unmerged {
		return fmt.Errorf("%d unmerged dependencies, counted %d", unmerged, c.unmerged)
	}
	for _, w := range c.waits {
		if !containsComponent(w.on.waiters, c) {
			return fmt.Errorf("waits on %s, which does not list it", w.on.name)
		}
	}
	for _, o := range c.overlaps {
		switch {
		case o == c:
			return fmt.Errorf("overlaps itself")
		case c.state == Merged || o.state == Merged:
			return fmt.Errorf("%s overlaps %s %s: an overlap outlived a merge", c.state, o.state, o.name)
		case !containsComponent(o.overlaps, c):
			return fmt.Errorf("overlaps %s, which does not list it", o.name)
		}
	}
	if c.branch != "" {
		if _, err := protocol.CheckRef(c.branch); err != nil {
			return fmt.Errorf("kept branch %q: %v", c.branch, err)
		}
	}
	for _, x := range c.waiters {
		if !x.waitsOn(c) {
			return fmt.Errorf("lists %s as waiting, which does not wait", x.name)
		}
	}
	return nil
}

func containsComponent(list []*component, c *component) bool {
	for _, x := range list {
		if x == c {
			return true
		}
	}
	return false
}

func TestProperties(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 30
	}
	for seed := range seeds {
		c := seeded{rand.New(rand.NewPCG(uint64(seed), 7))}
		if err := run(c, 400, func() bool { return true }); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// FuzzEngine drives the engine with operations chosen by the fuzzer's bytes
// and checks the invariants after each (make fuzz-engine).
func FuzzEngine(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	f.Add([]byte("claim progress ready audit fail retry escalate resolve"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &fuzzBytes{data: data}
		if err := run(c, 1000, func() bool { return !c.done() }); err != nil {
			t.Fatal(err)
		}
	})
}

package vopr

import (
	"math"
	"strings"
	"time"

	"github.com/agentforeman/foreman/coordinator"
)

// fault is a kind of fault, injected or merely seen happen.
type fault int

// The faults. The first ones are injected by the seed's plan; the last ones
// are counted when they happen.
const (
	faultKill        fault = iota // foreman killed while idle
	faultKillCommit               // killed with what it handled not yet committed
	faultKillSend                 // killed between a commit and the send
	faultDiskFull                 // a commit failed: foreman stops
	faultDamage                   // a journal record damaged
	faultSnapDamage               // the snapshot damaged
	faultCut                      // the journal cut short
	faultDeleted                  // the journal deleted
	faultDrop                     // foreman's connection dropped
	faultRoomRestart              // the server restarted: channel and history gone
	faultTwin                     // a second foreman with the same key
	faultStall                    // foreman stopped (SIGSTOP) for a while
	faultClockJump                // the room's clock jumped
	faultLongAway                 // foreman away longer than the history reaches
	faultSilent                   // a builder went silent, then came back
	faultRepeat                   // a builder said a line twice
	faultFlood                    // a flood of messages
	faultMalformed                // malformed lines
	faultHostile                  // lines meant to be misread
	faultNotOwned                 // lines about a component the sender does not own
	faultBlocked                  // BLOCKED
	faultConflict                 // CONFLICT
	faultAbort                    // ABORT, soft or hard
	faultPause                    // an operator's PAUSE, RESUME later
	faultAssign                   // an operator's ASSIGN
	faultRelease                  // an operator's RELEASE
	faultReload                   // SIGHUP: components and roles read again
	faultRefused                  // seen: a message the room refused as too fast
	faultRedacted                 // seen: a message the room rewrote
	faultGap                      // seen: a gap notice foreman said
	faultRestart                  // seen: foreman started again
	faultTakeover                 // seen: a standby took over while foreman was stalled (Options.Takeovers)
	faultOverlap                  // seen: the host said OVERLAP
	faultHandoff                  // seen: the host pinned a departed builder's work and said so
	numFaults
	numInjected = faultRefused
)

var faultNames = [numFaults]string{
	"kill (idle)", "kill (before commit)", "kill (after commit, before send)", "journal write failed",
	"journal record damaged", "snapshot damaged", "journal cut short", "journal deleted",
	"connection dropped", "room restarted", "second foreman, same key", "foreman stalled",
	"room clock jumped", "away longer than the history",
	"builder silent, then back", "line repeated", "flood", "malformed lines", "hostile lines",
	"lines about another's component", "BLOCKED", "CONFLICT", "ABORT", "PAUSE/RESUME", "ASSIGN",
	"RELEASE", "reload (SIGHUP)",
	"message refused as too fast", "message redacted", "gap notice said", "foreman restarted",
	"takeover while stalled", "OVERLAP said by the host", "handoff pinned by the host",
}

func (f fault) String() string { return faultNames[f] }

// Faults counts faults by kind.
type Faults [numFaults]int

// Add adds other's counts.
func (f *Faults) Add(other Faults) {
	for i := range f {
		f[i] += other[i]
	}
}

// Each calls fn with every kind's name and count, in a fixed order.
func (f Faults) Each(fn func(name string, n int, injected bool)) {
	for i, n := range f {
		fn(faultNames[i], n, fault(i) < numInjected)
	}
}

// plan is what the seed chose: the build, the room, and which faults
// strike how often (each seed enables some kinds only, so that rare
// combinations get their turn).
type plan struct {
	w             *world
	faultEnd      time.Duration
	every         time.Duration // mean time between faults
	weights       [numInjected]int
	killP         float64 // the chance of a kill at each kill point
	rate          time.Duration
	history       int
	snapshotEvery int
	maxMessage    int
	latMax        time.Duration
	longDown      float64 // the chance a downtime is long
}

func newPlan(w *world) *plan {
	r := w.rnd
	p := &plan{w: w}
	p.faultEnd = time.Duration(30+r.IntN(150)) * time.Minute
	p.every = time.Duration(1+r.IntN(10)) * time.Minute
	for i := range p.weights {
		if r.IntN(3) > 0 {
			p.weights[i] = 1 + r.IntN(4)
		}
	}
	p.killP = []float64{0.002, 0.01, 0.03, 0.08}[r.IntN(4)]
	p.rate = []time.Duration{time.Second, time.Second, time.Second, 200 * time.Millisecond}[r.IntN(4)]
	p.history = []int{3, 5, 10, 20, 20, 50}[r.IntN(6)]
	p.snapshotEvery = []int{3, 10, 50, 1000}[r.IntN(4)]
	p.maxMessage = []int{1 << 20, 1 << 20, 8192, 4096}[r.IntN(4)]
	_ = r.IntN(6) // was a writeback delay of the alive mark, before it was synced: drawn still, so each seed keeps its story
	p.latMax = []time.Duration{time.Millisecond, 20 * time.Millisecond, 200 * time.Millisecond}[r.IntN(3)]
	p.longDown = []float64{0, 0.2, 0.5}[r.IntN(3)]
	return p
}

func (p *plan) on(f fault) bool { return f < numInjected && p.weights[f] > 0 }

// build is the build the seed chose: components, dependencies and rules.
func (p *plan) build() coordinator.Config {
	r := p.w.rnd
	rules := coordinator.DefaultRules()
	rules.CheckinInterval = []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute}[r.IntN(3)]
	rules.MissedCheckins = 2 + r.IntN(2)
	rules.AuditAttempts = 2 + r.IntN(2)
	rules.AuditTimeout = []time.Duration{2 * time.Minute, 5 * time.Minute}[r.IntN(2)]
	rules.MaxClaimsPerAgent = []int{1, 1, 2}[r.IntN(3)]
	if r.IntN(2) == 0 {
		rules.Overlap = coordinator.OverlapWait
	}
	return coordinator.Config{Build: "shop", Components: pickComponents(r), Rules: rules}
}

func (p *plan) latency() time.Duration {
	return time.Duration(1+p.w.rnd.Int64N(int64(p.latMax))) * 1
}

func (p *plan) snapshotDelay() time.Duration {
	return time.Duration(p.w.rnd.Int64N(int64(2 * time.Second)))
}

// downtime is how long foreman stays down: mostly short, sometimes longer
// than its check-in deadline and than the history reaches.
func (p *plan) downtime() time.Duration {
	r := p.w.rnd
	if r.Float64() < p.longDown && p.on(faultLongAway) {
		p.w.count(faultLongAway)
		d := p.w.engCfg.Rules.CheckinInterval * time.Duration(p.w.engCfg.Rules.MissedCheckins)
		return d/2 + time.Duration(r.Int64N(int64(3*d)))
	}
	return time.Duration(100+r.IntN(10000)) * time.Millisecond
}

// schedule strikes a fault now and then until the faults are over.
func (p *plan) schedule() {
	total := 0
	for _, w := range p.weights {
		total += w
	}
	if total == 0 {
		return
	}
	var next func()
	next = func() {
		if p.w.calm {
			return
		}
		p.strike(total)
		gap := time.Duration(float64(p.every) * -math.Log(1-p.w.rnd.Float64()))
		p.w.after(max(gap, 100*time.Millisecond), next)
	}
	p.w.after(time.Duration(p.w.rnd.Int64N(int64(p.every)))+time.Second, next)
}

func (p *plan) strike(total int) {
	n := p.w.rnd.IntN(total)
	f := fault(0)
	for ; f < numInjected; f++ {
		if n < p.weights[f] {
			break
		}
		n -= p.weights[f]
	}
	p.inject(f)
}

// inject makes fault f happen now, if it can.
func (p *plan) inject(f fault) {
	w := p.w
	r := w.rnd
	fm := w.fm
	up := fm != nil && !fm.dead
	b := w.rnd.IntN(len(w.builders))
	switch f {
	case faultBlocked, faultConflict, faultAbort:
		// These need a builder at work: take one if there is one.
		var busy []int
		for i, x := range w.builders {
			if x.st == working || f == faultAbort && x.st == blocked {
				busy = append(busy, i)
			}
		}
		if len(busy) > 0 {
			b = busy[w.rnd.IntN(len(busy))]
		}
	}
	bld, ba := w.builders[b], w.bagents[b]
	names := w.componentNames()
	switch f {
	case faultKill:
		if !up {
			return
		}
		w.trace("inject: kill")
		fm.kill()
	case faultKillCommit, faultKillSend:
		return // at kill points (world.killPoint)
	case faultDiskFull:
		if !up {
			return
		}
		fm.st.fail = true
	case faultDamage, faultSnapDamage, faultCut, faultDeleted:
		if !up {
			return
		}
		w.pendingDamage = f
		w.trace("inject: kill, then %s", f)
		fm.kill()
		return // counted when applied
	case faultDrop:
		if !up || fm.cl.conn == nil || fm.cl.conn.closed {
			return
		}
		w.trace("inject: drop foreman's connection")
		w.room.close(fm.cl.conn)
	case faultRoomRestart:
		w.trace("inject: the room restarts")
		w.room.restart()
	case faultTwin:
		if w.twin != nil || !w.roomShowsStamp() {
			return
		}
		w.startTwin()
	case faultStall:
		if !up || fm.stalled {
			return
		}
		if w.opts.Takeovers {
			w.takeover(fm)
			return
		}
		d := time.Duration(1+r.IntN(20)) * time.Second
		w.trace("inject: foreman stalls for %s", d)
		fm.stall()
		w.after(d, fm.resume)
	case faultClockJump:
		j := time.Duration(1+r.IntN(30)) * time.Second
		if r.IntN(3) == 0 {
			j = -time.Duration(100+r.IntN(900)) * time.Millisecond
		}
		w.trace("inject: the room's clock jumps %s", j)
		w.room.skew += j
		w.check.jumped(w.room.now(), j)
	case faultLongAway:
		return // in downtime
	case faultSilent:
		d := w.engCfg.Rules.CheckinInterval * time.Duration(1+r.IntN(2*w.engCfg.Rules.MissedCheckins))
		bld.goSilent(ba, d)
	case faultRepeat:
		bld.repeat = true
	case faultFlood:
		if w.mal == nil || !w.mal.online {
			return
		}
		w.mal.b.(*mallory).flood(w.mal, names)
	case faultMalformed:
		bld.malformed(ba)
	case faultHostile:
		if w.mal == nil || !w.mal.online {
			return
		}
		w.mal.b.(*mallory).hostile(w.mal, names)
	case faultNotOwned:
		bld.notMine(ba, names)
	case faultBlocked:
		dep := names[r.IntN(len(names))]
		if r.IntN(4) == 0 {
			dep = "ghost" + strings.Repeat("x", r.IntN(3))
		}
		if !bld.blockOn(ba, dep) {
			return
		}
	case faultConflict:
		kind := "files"
		if r.IntN(4) == 0 {
			kind = "interface"
		}
		if !bld.conflictWith(ba, names[r.IntN(len(names))], kind) {
			return
		}
	case faultAbort:
		if !bld.abort(ba, r.IntN(3) == 0) {
			return
		}
	case faultPause:
		w.op.pause(w.opAgent, time.Duration(1+r.IntN(20))*time.Minute)
	case faultAssign:
		if !w.op.assign(w.opAgent) {
			return
		}
	case faultRelease:
		if !w.op.release(w.opAgent) {
			return
		}
	case faultReload:
		if !up {
			return
		}
		w.reload()
	}
	w.count(f)
}

// damage applies the journal damage chosen when foreman was killed for it,
// before the restart. A copy is kept for the operator to restore.
func (p *plan) damage() {
	w := p.w
	f := w.pendingDamage
	w.pendingDamage = -1
	if w.broken != "" {
		return // damaged already, until the operator restores it
	}
	d := w.disk
	switch f {
	case faultDamage:
		if len(d.records) == 0 {
			return
		}
		w.backup = d.clone()
		rec := &d.records[w.rnd.IntN(len(d.records))]
		rec.data = append([]byte(nil), rec.data...)
		rec.data[w.rnd.IntN(len(rec.data))] ^= 0x20
	case faultSnapDamage:
		if d.snap == nil {
			return
		}
		w.backup = d.clone()
		d.snap[w.rnd.IntN(len(d.snap))] ^= 0x01
	case faultCut:
		// Only a cut the alive mark shows is detectable (the journal's own
		// rule); one past it is a torn tail, which a kill makes anyway.
		var keep int
		for keep = len(d.records); keep > 0 && d.records[keep-1].index > d.alive.index; keep-- {
		}
		if keep == 0 || d.alive.index == 0 {
			return
		}
		w.backup = d.clone()
		d.records = d.records[:keep-1-w.rnd.IntN(keep)]
		if len(d.records) == 0 && d.snap == nil {
			d.records = nil
		}
	case faultDeleted:
		if !w.roomShowsStamp() {
			return
		}
		w.backup = d.clone()
		w.disk = &disk{}
	default:
		return
	}
	w.broken = f.String()
	if f == faultDeleted {
		w.broken = "deleted"
	}
	w.count(f)
	w.trace("the journal: %s", f)
}

// reload is SIGHUP: the configuration edited (one more component, the
// auditors listed or not) or not, and read again.
func (w *world) reload() {
	comps := w.engCfg.Components
	roles := w.engCfg.Roles
	if w.rnd.IntN(3) == 0 {
		name := "extra" + string(rune('a'+w.reloads))
		w.reloads++
		comps = append(append([]coordinator.Component(nil), comps...), coordinator.Component{Name: name})
		w.engCfg.Components = comps
	}
	if w.rnd.IntN(2) == 0 {
		// The auditors listed, or not (then anyone but the builder audits).
		if len(roles.Auditors) > 0 {
			roles.Auditors = nil
		} else {
			roles.Auditors = []string{w.audAgent.id}
		}
		w.engCfg.Roles = roles
	}
	w.trace("inject: reload (%d components, auditors %v)", len(comps), roles.Auditors)
	w.fm.reload(comps, roles)
}

func (w *world) componentNames() []string {
	names := make([]string, len(w.engCfg.Components))
	for i, c := range w.engCfg.Components {
		names[i] = c.Name
	}
	return names
}

// roomShowsStamp reports whether the room's history holds one of foreman's
// stamped messages: then a foreman that does not know the build must see
// that it exists.
func (w *world) roomShowsStamp() bool {
	for _, p := range w.room.history {
		if p.from == w.foremanID && strings.Contains(p.content, "[foreman ") {
			return true
		}
	}
	return false
}

// startTwin starts a second foreman with this identity and an empty
// journal of its own: it displaces the first, and must refuse.
func (w *world) startTwin() {
	w.trace("inject: a second foreman with the same key")
	p := &proc{w: w, life: -1, id: w.foremanID, twin: true, d: &disk{}}
	w.twin = p
	w.twins++
	if err := p.start(); err != nil {
		p.dead = true
		w.ended(p, err)
	}
}

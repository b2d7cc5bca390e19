package host

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// QueueView is the queue as foreman status and the board show it.
type QueueView struct {
	At          time.Time   `json:"at"`
	Target      string      `json:"target"`
	MaxParallel int         `json:"max_parallel"`
	Running     []QueueItem `json:"running"`
	Waiting     []QueueItem `json:"waiting"`
	Train       []TrainCar  `json:"train"`
	Recent      []Verdict   `json:"recent"`
	// Flaky counts, per check command, the checks that failed and then
	// passed when run again on the same tree.
	Flaky map[string]int `json:"flaky,omitempty"`
	// Commands are what the host learned of each check command that
	// failed: its failures, those whose tree later passed, and whether
	// it is flaky (a failure tried again before anyone is blamed).
	Commands []FlakyCommand `json:"commands,omitempty"`
	// CheckRuns are the runs of the checks in the host's life (a READY's,
	// a car's; a tree that passed before and is reused is none), and
	// LandedN the components it landed: what each landing cost in checks.
	CheckRuns int `json:"check_runs"`
	LandedN   int `json:"landed_n"`
	// Landed is what this host landed (or found landed) in its life, the
	// last maxShownLanded, each with where its receipt is.
	Landed []LandedView `json:"landed,omitempty"`
}

// maxShownLanded bounds the landings the queue view lists.
const maxShownLanded = 200

// TrainCar is one approved component in the train, in landing order.
type TrainCar struct {
	Component string    `json:"c"`
	Owner     string    `json:"owner,omitempty"`
	Ref       string    `json:"ref"`
	Tip       string    `json:"tip,omitempty"`
	On        string    `json:"on"`    // what it is checked on: the target and the cars ahead, main+a+b
	State     string    `json:"state"` // waiting, checking, passed, failed (blamed once the cars ahead pass), landing
	Run       int       `json:"run,omitempty"`
	Since     time.Time `json:"since,omitzero"` // its check or landing started
	ETA       time.Time `json:"eta"`            // expected to land
	Why       string    `json:"why,omitempty"`  // what it waits for, or its failure
}

// QueueItem is one job in the queue.
type QueueItem struct {
	Run       int       `json:"run"`
	Kind      string    `json:"kind"`
	Component string    `json:"c"`
	Ref       string    `json:"ref"`
	Owner     string    `json:"owner,omitempty"`
	Queued    time.Time `json:"queued"`
	Started   time.Time `json:"started,omitzero"`
	NotBefore time.Time `json:"not_before,omitzero"` // a retry waits until then
	Why       string    `json:"why,omitempty"`       // why it is retried, or what it waits for
}

// Queue is a view of the queue now.
func (h *Core) Queue() QueueView {
	v := QueueView{At: h.now, Target: h.cfg.Target, MaxParallel: h.cfg.MaxParallel,
		Running: []QueueItem{}, Waiting: []QueueItem{}, Recent: append([]Verdict{}, h.recent...)}
	for _, r := range h.running {
		if r.Kind != Scan && r.Kind != Pin && r.Kind != Head { // work in progress, or the signed head: not the queue
			v.Running = append(v.Running, item(r))
		}
	}
	sort.Slice(v.Running, func(i, j int) bool { return v.Running[i].Run < v.Running[j].Run })
	_, gather := h.checksDue()
	for _, r := range h.order {
		it := item(r)
		if !gather.IsZero() && r.sharable() && !r.notBefore.After(h.now) {
			it.Why = h.gathering("READYs", gather)
		}
		v.Waiting = append(v.Waiting, it)
	}
	v.Train = make([]TrainCar, 0, len(h.train))
	_, gather = h.batches()
	for i := range h.train {
		tc := h.trainCar(i)
		if !gather.IsZero() && tc.State == "waiting" && tc.Why == "" && !slices.ContainsFunc(h.train[i:], func(k *car) bool { return k.done != nil || k.run != nil }) {
			tc.Why = h.gathering("approved components", gather)
		}
		v.Train = append(v.Train, tc)
	}
	if n := len(h.lands); n > 0 {
		v.Landed = append([]LandedView{}, h.lands[max(0, n-maxShownLanded):]...)
	}
	v.CheckRuns, v.LandedN = h.checkRuns, h.landedN
	v.Commands = h.flakyView()
	sort.Slice(v.Commands, func(i, j int) bool { return v.Commands[i].Command < v.Commands[j].Command })
	if len(h.flaky) > 0 {
		v.Flaky = make(map[string]int, len(h.flaky))
		for k, n := range h.flaky {
			v.Flaky[k] = n
		}
	}
	return v
}

func (h *Core) trainCar(i int) TrainCar {
	k := h.train[i]
	on := h.cfg.Target
	for _, a := range h.train[:i] {
		on += "+" + a.c.name
	}
	tc := TrainCar{Component: k.c.name, Owner: k.c.owner, Ref: k.c.ref, Tip: k.tip, On: on, State: "waiting", ETA: h.eta(i)}
	cover, by := h.coverOf(i), h.checkedBy(i)
	switch {
	case h.inLanding(k):
		tc.State, tc.Run, tc.Since = "landing", h.landing.Run, h.landing.started
		tc.Why = h.landing.said
	case k.done != nil && k.done.Result == Passed:
		tc.State, tc.Run = "passed", k.done.Run
	case cover > i:
		// In a batch: a chain behind it, which holds it, passed.
		head := h.train[cover]
		tc.State, tc.Run = "passed", head.done.Run
		tc.Why = "in the batch up to " + head.c.name + ", whose chain passed"
	case k.done != nil:
		tc.State, tc.Run = "failed", k.done.Run
		tc.Why = k.done.Result.String() + ": " + bound(k.done.Line, 120) + "; blamed only if the chain just ahead passes and none behind it does"
	case k.run != nil && !k.run.started.IsZero():
		tc.State, tc.Run, tc.Since = "checking", k.run.Run, k.run.started
		if f := h.failedBehind(i); f >= 0 {
			lo := i // the cars the failure may be the fault of: from the last pass ahead of it, up to f
			for lo > 0 && !passed(h.train[lo-1]) && !h.inLanding(h.train[lo-1]) {
				lo--
			}
			tc.Why = fmt.Sprintf("bisecting the batch whose chain up to %s failed: %d cars in question, %s to %s",
				h.train[f].c.name, f-lo+1, h.train[lo].c.name, h.train[f].c.name)
		}
	case by > i:
		tc.Why = "in the batch checked with " + h.train[by].c.name
	case k.notBefore.After(h.now):
		tc.Why = k.said
	}
	return tc
}

// gathering says what waits for more to be checked with (host.batch.min).
func (h *Core) gathering(what string, until time.Time) string {
	return fmt.Sprintf("waiting for more %s to be checked with it (host.batch.min %d), until %s at the latest",
		what, h.cfg.BatchMin, until.UTC().Format(time.TimeOnly))
}

func item(r *run) QueueItem {
	return QueueItem{Run: r.Run, Kind: r.Kind.String(), Component: r.Component, Ref: r.Ref, Owner: r.Owner,
		Queued: r.queued, Started: r.started, NotBefore: r.notBefore, Why: r.said}
}

// answerStatus answers STATUS in the room with one chat line on the queue
// (foreman answers with the board): for STATUS c, where c is in the queue,
// if it is; for STATUS, the whole queue, at most once per 10 seconds.
func (h *Core) answerStatus(name string) {
	if name != "" {
		if line := h.queueLine(name); line != "" {
			h.say(line)
		}
		return
	}
	if !h.queueSaid.IsZero() && h.now.Sub(h.queueSaid) < 10*time.Second {
		return
	}
	h.queueSaid = h.now
	h.say(h.queueSummary())
}

func (h *Core) queueLine(name string) string {
	c := h.comps[name]
	if c == nil {
		return ""
	}
	for i, k := range h.train {
		if k.c == c {
			tc := h.trainCar(i)
			return fmt.Sprintf("queue: %s in the train, %d of %d, %s on %s; expected to land in %s",
				name, i+1, len(h.train), tc.State, tc.On, age(tc.ETA.Sub(h.now)))
		}
	}
	if c.run == nil {
		return ""
	}
	r := c.run
	if !r.started.IsZero() {
		return fmt.Sprintf("queue: %s %s of %s running for %s", name, r.Kind, r.Ref, age(h.now.Sub(r.started)))
	}
	for i, q := range h.order {
		if q == r {
			s := fmt.Sprintf("queue: %s %s of %s waiting, %d of %d", name, r.Kind, r.Ref, i+1, len(h.order))
			if r.notBefore.After(h.now) {
				s += fmt.Sprintf(", retried in %s: %s", age(r.notBefore.Sub(h.now)), r.said)
			}
			return s
		}
	}
	return ""
}

func (h *Core) queueSummary() string {
	v := h.Queue()
	if len(v.Running)+len(v.Waiting)+len(v.Train) == 0 {
		return fmt.Sprintf("queue: empty; max_parallel %d", v.MaxParallel)
	}
	var run, wait, train []string
	for _, it := range v.Running {
		run = append(run, fmt.Sprintf("%s %s %s", it.Component, it.Kind, age(h.now.Sub(it.Started))))
	}
	for _, it := range v.Waiting {
		wait = append(wait, it.Component)
	}
	for _, tc := range v.Train {
		train = append(train, fmt.Sprintf("%s %s, lands in %s", tc.Component, tc.State, age(tc.ETA.Sub(h.now))))
	}
	line := fmt.Sprintf("queue: %d running", len(run))
	if len(run) > 0 {
		line += " (" + strings.Join(run, ", ") + ")"
	}
	line += fmt.Sprintf(", %d waiting", len(wait))
	if len(wait) > 0 {
		line += " (" + strings.Join(wait, ", ") + ")"
	}
	if len(train) > 0 {
		line += fmt.Sprintf("; train of %d on %s: %s", len(train), v.Target, strings.Join(train, "; "))
	}
	return bound(line+fmt.Sprintf("; max_parallel %d", v.MaxParallel), 400)
}

func age(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return d.Round(time.Second).String()
}

package hostsim

import (
	"context"
	"strings"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/host/invariant"
	"github.com/agentforeman/foreman/internal/host/receipt"
	"github.com/agentforeman/foreman/internal/verify"
	"github.com/agentforeman/foreman/protocol"
)

// checker holds what the room said that the promise is about, from a
// watcher's seat, and checks the promise after every step.
type checker struct {
	w *world

	lastPass  map[string]string          // component -> the builder's commit of the host's last CI PASS of it
	reviewTip map[string]string          // component -> the commit its last REVIEW was about
	reviewRef map[string]string          // component -> the ref its last REVIEW named
	approved  map[string]map[string]bool // component -> the commits foreman approved it at
	merged    map[string]bool

	key   receipt.Key   // the host's, whose receipts count
	cache *verify.Cache // the receipts opened so far
}

func newChecker(w *world) *checker {
	return &checker{w: w, lastPass: map[string]string{}, reviewTip: map[string]string{}, reviewRef: map[string]string{},
		approved: map[string]map[string]bool{}, merged: map[string]bool{}}
}

// heard is a message of the room: the host's verdicts, foreman's REVIEW
// and MERGED and COMPLETE.
func (c *checker) heard(m agentchat.Message) {
	for line := range protocol.Lines(m.Content) {
		line = strings.TrimSpace(line)
		f := strings.Fields(line)
		switch {
		case m.From == c.w.host.id && len(f) >= 4 && f[0] == "CI" && f[2] == "PASS":
			if mc := c.w.repo.commits[f[3]]; mc != nil && len(mc.parents) == 2 {
				c.lastPass[f[1]] = mc.parents[1]
			}
		case m.From == c.w.foreman && len(f) >= 4 && f[0] == "REVIEW":
			c.reviewTip[f[1]], c.reviewRef[f[1]] = c.lastPass[f[1]], f[3]
		case m.From == c.w.host.id && len(f) == 2 && f[0] == "MERGED":
			c.hostMerged(f[1])
		case m.From == c.w.foreman && len(f) >= 1 && f[0] == "COMPLETE":
			c.w.complete = true
		case m.From == c.w.foreman && (len(f) == 2 && f[0] == "MERGED" || len(f) == 3 && f[0] == "OK" && f[1] == "MERGED"):
			c.merged[f[len(f)-1]] = true
		}
		if m.From == c.w.host.id || m.From == c.w.foreman {
			c.w.trace("%s: %s", map[bool]string{true: "host", false: "foreman"}[m.From == c.w.host.id], line)
		}
	}
}

// hostMerged: the host says MERGED c only once c's approved work is on
// main.
func (c *checker) hostMerged(comp string) {
	main := c.w.repo.refs["main"]
	for tip := range c.approved[comp] {
		if c.w.repo.isAncestor(tip, main) {
			return
		}
	}
	c.w.fail("the host said MERGED %s, and main holds no approved commit of it", comp)
}

// step checks the promise after a step: first, what foreman has approved
// now (an AUDIT PASS it took, of the commit the REVIEW was about), then
// that main never points at a batch's commit below its head, then the
// landing invariant (package invariant, the one every host test ends
// with) on main as it is: its first-parent line since the host began
// landed by the host, approved, on a tree that passed (its own, or its
// batch head's; its own with host.batch.max 1), each approval once, the
// chain of receipts unbroken, not rolled back below the signed head.
// Between steps a landing's receipt the ledger holds counts as its note
// (a kill may have cut the note off: a Note job writes it once the host
// is back); at the end (final), only the notes do, and the signed head
// must anchor the newest landing.
func (c *checker) step() { c.judge(true) }

func (c *checker) final() { c.judge(false) }

func (c *checker) judge(between bool) {
	for _, v := range c.w.bot.Node().Engine().View().Components {
		if v.Approved {
			if tip := c.reviewTip[v.Name]; tip != "" {
				if c.approved[v.Name] == nil {
					c.approved[v.Name] = map[string]bool{}
				}
				c.approved[v.Name][tip] = true
			}
		}
	}
	r := c.w.repo
	// A batch lands by one compare-and-swap to its head: main never holds
	// one of its other commits, whose trees no check passed, alone.
	if l, ok := r.landed[r.refs["main"]]; ok && l.head != "" && l.head != r.refs["main"] {
		c.w.fail("main points at %s (%s), a commit of the batch whose head is %s: main never holds a batch's commit but its head",
			short(r.refs["main"]), l.component, short(l.head))
		return
	}
	if !c.anyLanded() {
		return // nothing landed yet: the chain has no start to verify from
	}
	if c.cache == nil {
		key, err := receipt.KeyOf(c.w.host.key.PublicPEM())
		if err != nil {
			c.w.fail("the host's key: %v", err)
			return
		}
		c.key, c.cache = key, verify.NewCache()
	}
	o := verify.Options{Repo: r.history(c.w.host.ledger, between), Target: "main", Trusted: []receipt.Key{c.key},
		Repository: "shop", Now: c.w.now(), Unanchored: between, Cache: c.cache}
	truth := invariant.Truth{
		Approved:  func(comp, tip string) bool { return c.approved[comp][tip] },
		Passed:    func(tree string) bool { return r.passed[tree] },
		ByHand:    func(id string) bool { return r.byHand[id] },
		NoBatches: c.w.host.cfg.Batch == 1,
	}
	if _, err := invariant.Check(context.Background(), o, truth); err != nil {
		c.w.fail("%v", err)
	}
}

// anyLanded reports whether main holds a landing of the host's.
func (c *checker) anyLanded() bool {
	r := c.w.repo
	for id := r.refs["main"]; id != ""; {
		if _, ok := r.landed[id]; ok {
			return true
		}
		cm := r.commits[id]
		if len(cm.parents) == 0 {
			return false
		}
		id = cm.parents[0]
	}
	return false
}

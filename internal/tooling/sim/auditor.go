package sim

import (
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// Auditor scripts an auditor: it answers every REVIEW after Delay (give or
// take a tenth), PASS unless Fail has findings left for the component.
type Auditor struct {
	Delay time.Duration
	// Fail lists, per component, the findings of the reviews it fails, in
	// order: {"cart": {"a", "b"}} fails cart's first two reviews.
	Fail map[string][]string
}

type auditor struct {
	s    Auditor
	done map[string]int // reviews of each component failed so far
}

func newAuditor(s Auditor) *auditor {
	if s.Delay <= 0 {
		s.Delay = 2 * time.Minute
	}
	return &auditor{s: s, done: map[string]int{}}
}

func (a *auditor) start(world) {}

func (a *auditor) agent(world, string, string) {}

func (a *auditor) coordinator(w world, r reply) {
	if r.Verb != protocol.ReplyReview {
		return
	}
	verdict := a.verdict(r.C)
	w.after(spread(w, a.s.Delay), func() { w.say(line("AUDIT", r.C, verdict)) })
}

// verdict is decided when the review is asked for, so two reviews of one
// component in flight get successive findings.
func (a *auditor) verdict(c string) string {
	return nextVerdict(a.s.Fail[c], a.done, c)
}

// nextVerdict is PASS, or FAIL with the next scripted finding.
func nextVerdict(findings []string, done map[string]int, c string) string {
	n := done[c]
	if n >= len(findings) {
		return "PASS"
	}
	done[c] = n + 1
	return line("FAIL", findings[n])
}

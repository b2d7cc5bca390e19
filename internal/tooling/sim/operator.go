package sim

import (
	"regexp"
	"strings"
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// Operator scripts a human operator who settles escalations after Delay
// (give or take a tenth): a missing component is added and made a
// dependency, every other hold on a component is resolved. Escalations that
// hold nothing (audit-overdue, claim-dispute, build overtime) need no
// decision here and are let be.
type Operator struct {
	Delay time.Duration
	// Notes are the RESOLVE notes by escalation code; default "decided".
	Notes map[string]string
}

type operator struct{ s Operator }

func newOperator(s Operator) *operator {
	if s.Delay <= 0 {
		s.Delay = 3 * time.Minute
	}
	return &operator{s: s}
}

func (o *operator) start(world) {}

func (o *operator) agent(world, string, string) {}

// missingRE finds the component a need-info escalation says the build lacks.
var missingRE = regexp.MustCompile(`needs (\S+), which is not a component`)

func (o *operator) coordinator(w world, r reply) {
	if r.Verb != protocol.ReplyEscalate || !protocol.Escalation(r.Code).Holds() || !protocol.ValidComponent(r.C) {
		return
	}
	// A cycle in the graph halts the build and names the build, not a
	// component: only a human can choose which edge to cut. A component's
	// cycle comes from its own BLOCKED line, which RESOLVE settles.
	if r.Code == string(protocol.Cycle) && !strings.HasPrefix(r.Rest, "BLOCKED ") {
		return
	}
	var lines []string
	if m := missingRE.FindStringSubmatch(r.Rest); r.Code == string(protocol.NeedInfo) && m != nil {
		lines = append(lines, "ADD "+m[1], line("DEPEND", r.C, m[1]))
	}
	note, ok := o.s.Notes[r.Code]
	if !ok {
		note = "decided"
	}
	lines = append(lines, line("RESOLVE", r.C, note))
	w.after(spread(w, o.s.Delay), func() {
		for _, l := range lines {
			w.say(l)
		}
	})
}

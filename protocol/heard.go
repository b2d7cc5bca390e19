package protocol

import (
	"fmt"
	"strconv"
	"strings"
)

// Heard is a coordinator reply as an agent hears it in the room, read back
// into the parts the contract's section 3 gives it. Only the fields of the
// reply's verb are set. It is for those who hear replies (agents, their
// tools, tests); the coordinator keeps its own replies typed as Reply.
type Heard struct {
	Verb ReplyVerb
	// Subject is what the line is about: the component, "build" for
	// build-level ESCALATE and ERROR lines, the build's name for COMPLETE,
	// the command's component for OK (if it names one), and for an ERROR
	// about a malformed line the sender who said it.
	Subject    string
	Agent      string   // the sender id named: ACK REJECT TIMEOUT RETRY REVIEW FIX WAIT UNBLOCKED
	Components []string // TASKS: the claimable components, in order
	Code       Escalation
	Attempt    int    // FIX: n of n/max
	Max        int    // FIX: max of n/max
	Dep        string // WAIT: what c waits for
	PR         string // REVIEW
	State      string // STATUS
	Fields     []Field
	// Text is the free text at the end: TASKS's note (after TasksNote: who
	// must claim again), ACK's context, REJECT's reason,
	// FIX's findings, ESCALATE's what-and-suggestion, ERROR's text, OK's
	// command as read.
	Text string
	Line string // the whole line
}

// Field returns the value of a STATUS field, "" if the line has none.
func (h Heard) Field(key string) string {
	for _, f := range h.Fields {
		if f.Key == key {
			return f.Value
		}
	}
	return ""
}

// ReadReply reads a line the coordinator said. It fails on a line that is
// not a reply of the contract's shape (an unknown verb, a missing name),
// saying what is wrong; lines from others than the coordinator need not be
// replies at all.
func ReadReply(line string) (Heard, error) {
	line = strings.TrimSpace(line)
	s := scanner{rest: line}
	word := s.word()
	h := Heard{Verb: LookupReplyVerb(word), Line: line}
	if h.Verb == NoReply {
		return Heard{}, fmt.Errorf("%q is not a reply verb", word)
	}
	need := func(what string) (string, error) {
		w := s.word()
		if w == "" {
			return "", fmt.Errorf("%s: missing %s", h.Verb, what)
		}
		return w, nil
	}
	var err error
	if h.Verb == ReplyTasks {
		h.Components, h.Text = TaskList(s.tail())
		return h, nil
	}
	if h.Verb == ReplyOK {
		h.Text = s.tail()
		if cmd, err := ReadConfirmed(h.Text); err == nil {
			h.Subject = cmd.Component
		}
		return h, nil
	}
	if h.Subject, err = need("the subject"); err != nil {
		return Heard{}, err
	}
	switch h.Verb {
	case ReplyAck, ReplyReject, ReplyTimeout, ReplyRetry, ReplyReview, ReplyFix, ReplyWait, ReplyUnblocked:
		if h.Agent, err = need("the agent"); err != nil {
			return Heard{}, err
		}
	}
	switch h.Verb {
	case ReplyEscalate:
		code, err := need("the escalation code")
		if err != nil {
			return Heard{}, err
		}
		h.Code = Escalation(code)
	case ReplyReview:
		h.PR = s.word()
	case ReplyFix:
		n, err := need("the attempt n/max")
		if err != nil {
			return Heard{}, err
		}
		a, m, ok := strings.Cut(n, "/")
		if h.Attempt, err = strconv.Atoi(a); !ok || err != nil {
			return Heard{}, fmt.Errorf("FIX: %q is not an attempt n/max", n)
		}
		if h.Max, err = strconv.Atoi(m); err != nil {
			return Heard{}, fmt.Errorf("FIX: %q is not an attempt n/max", n)
		}
	case ReplyWait:
		if h.Dep, err = need("the dependency"); err != nil {
			return Heard{}, err
		}
	case ReplyStatus:
		if h.State, err = need("the state"); err != nil {
			return Heard{}, err
		}
		for w := s.word(); w != ""; w = s.word() {
			k, v, _ := strings.Cut(w, "=")
			h.Fields = append(h.Fields, Field{Key: k, Value: v})
		}
	}
	h.Text = s.tail()
	return h, nil
}

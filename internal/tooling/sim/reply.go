package sim

import (
	"strings"

	"github.com/agentforeman/foreman/protocol"
)

// reply is one coordinator line, split into the fields the sims act on.
// Only the shape of the contract's section 3 is assumed: verb, subject, and
// for most verbs the agent the line is about.
type reply struct {
	Verb  protocol.ReplyVerb
	C     string   // the component (or build, for COMPLETE and build escalations)
	Agent string   // the agent named, for ACK, REJECT, TIMEOUT, RETRY, REVIEW, FIX, WAIT, UNBLOCKED
	Code  string   // ESCALATE: the escalation code
	Rest  string   // what follows: context, reason, PR, dependency, details
	List  []string // TASKS: the claimable components
}

// agentVerbs are the replies whose third word is an agent id.
var agentVerbs = map[protocol.ReplyVerb]bool{
	protocol.ReplyAck: true, protocol.ReplyReject: true, protocol.ReplyTimeout: true,
	protocol.ReplyRetry: true, protocol.ReplyReview: true, protocol.ReplyFix: true,
	protocol.ReplyWait: true, protocol.ReplyUnblocked: true,
}

// parseReply reads a coordinator line; false for an empty line.
func parseReply(line string) (reply, bool) {
	word0, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	if word0 == "" {
		return reply{}, false
	}
	verb := protocol.LookupReplyVerb(word0)
	r := reply{Verb: verb}
	if verb == protocol.ReplyTasks {
		r.List, r.Rest = protocol.TaskList(rest)
		return r, true
	}
	r.C, rest = word(rest)
	switch {
	case agentVerbs[verb]:
		r.Agent, rest = word(rest)
	case verb == protocol.ReplyEscalate:
		r.Code, rest = word(rest)
	}
	r.Rest = strings.TrimSpace(rest)
	return r, true
}

// word splits off the first word of s.
func word(s string) (string, string) {
	s = strings.TrimLeft(s, " ")
	w, rest, _ := strings.Cut(s, " ")
	return w, rest
}

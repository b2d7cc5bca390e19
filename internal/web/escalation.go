package web

import (
	"strings"
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// Escalation is the latest ESCALATE said about one subject (a component or
// the build). The View says only which code holds a component; the board
// shows the whole reason, with the command that resolves it.
type Escalation struct {
	Code string    `json:"code"`
	Text string    `json:"text,omitempty"`
	At   time.Time `json:"at"`
}

// parseEscalation reads "ESCALATE <subject> <code> <text>". A code the
// contract does not list is reported as "other", so that metrics keep a
// bounded label set.
func parseEscalation(line string) (subject string, e Escalation, ok bool) {
	f := strings.SplitN(line, " ", 4)
	if len(f) < 3 || f[0] != protocol.ReplyEscalate {
		return "", e, false
	}
	e.Code = "other"
	for _, c := range protocol.Escalations() {
		if string(c) == f[2] {
			e.Code = f[2]
		}
	}
	if len(f) == 4 {
		e.Text = f[3]
	}
	return f[1], e, true
}

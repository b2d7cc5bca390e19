package web

import "time"

// Escalation is the latest ESCALATE said about one subject (a component or
// the build). The View says only which code holds a component; the board
// shows the whole reason, with the command that resolves it.
type Escalation struct {
	Code string    `json:"code"`
	Text string    `json:"text,omitempty"`
	At   time.Time `json:"at"`
}

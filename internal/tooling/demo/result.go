package demo

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// Entry is one line of the room, as said.
type Entry struct {
	At   time.Duration // contract time since the build started
	From string        // sender id
	Member
	Line string
}

// Result is how the demo went.
type Result struct {
	Build      string
	Components int
	Complete   bool
	Real       time.Duration // wall time from the build's start to COMPLETE (or the end)
	Contract   time.Duration // the same in contract time
	Minute     time.Duration
	Room       []Entry // every line the watcher heard, in the room's order
	Dir        string  // where the journal and recording were kept; "" if removed
	Virtual    bool    // played on a virtual clock (Simulate): Real is virtual time too
	Repo       string  // the --git demo's repository
	GitLog     string  // git log --oneline --graph of its main, at the end
	Verify     string  // foreman verify's table of its main, at the end

	Claims, Rejects, Timeouts, Retries, Fixes, Escalations, Merges int
}

// Said returns the coordinator's lines with the given reply verb.
func (r *Result) Said(verb protocol.ReplyVerb) []string {
	var out []string
	for _, e := range r.Room {
		if e.Role == RoleCoordinator && protocol.VerbOf(e.Line) == verb {
			out = append(out, e.Line)
		}
	}
	return out
}

// count tallies the room's lines for the summary.
func (r *Result) count() {
	for _, e := range r.Room {
		if e.Role != RoleCoordinator {
			if firstWord(e.Line) == "CLAIM" {
				r.Claims++
			}
			continue
		}
		switch protocol.VerbOf(e.Line) {
		case protocol.ReplyOK:
			if strings.HasPrefix(e.Line, "OK MERGED ") { // merge mode external: foreman took the merger's MERGED
				r.Merges++
			}
		case protocol.ReplyReject:
			r.Rejects++
		case protocol.ReplyTimeout:
			r.Timeouts++
		case protocol.ReplyRetry:
			r.Retries++
		case protocol.ReplyFix:
			r.Fixes++
		case protocol.ReplyEscalate:
			r.Escalations++
		case protocol.ReplyMerged:
			r.Merges++
		}
	}
}

// WriteSummary writes the closing summary.
func (r *Result) WriteSummary(w io.Writer, color bool) {
	c := func(col, s string) string {
		if !color {
			return s
		}
		return paint(col, s)
	}
	head := c(done, fmt.Sprintf("%s complete: %d components merged", r.Build, r.Merges)) + " in"
	if !r.Complete {
		head = c(warn, fmt.Sprintf("%s not complete: %d of %d components merged", r.Build, r.Merges, r.Components)) + " after"
	}
	if r.Virtual {
		fmt.Fprintf(w, "\n%s %s contract time (on a virtual clock)\n", head, Clock(r.Contract))
	} else {
		fmt.Fprintf(w, "\n%s %s contract time (%s real; one contract minute = %s)\n",
			head, Clock(r.Contract), r.Real.Round(100*time.Millisecond), r.Minute)
	}
	fmt.Fprintf(w, "claims %d, rejects %d, timeouts %d, retries %d, fixes %d, escalations %d, merges %d\n",
		r.Claims, r.Rejects, r.Timeouts, r.Retries, r.Fixes, r.Escalations, r.Merges)
	if r.Dir != "" {
		fmt.Fprintf(w, "journal and recording kept in %s\n", r.Dir)
	}
	if r.GitLog != "" {
		fmt.Fprintf(w, "\n$ git -C %s log --oneline --graph main\n%s", r.Repo, r.GitLog)
	}
	if r.Verify != "" {
		fmt.Fprintf(w, "\n$ foreman verify   # each commit on main: landed by foreman host, with a receipt that holds?\n%s", r.Verify)
	}
}

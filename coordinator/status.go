package coordinator

import (
	"strconv"
	"strings"
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// status answers STATUS [c]: one line per component, saying where it is and
// why (contract section 3).
func (e *Engine) status(agent, name string) {
	if name != "" {
		if c, ok := e.lookup(agent, name); ok {
			e.say(e.statusLine(c))
		}
		return
	}
	if !e.boardAllowed(agent) {
		return
	}
	for _, c := range e.comps {
		e.say(e.statusLine(c))
	}
}

// statusLine writes c's view as key=value fields; times are shown relative
// to now, as ages and time left.
func (e *Engine) statusLine(c *component) protocol.Reply {
	v := e.componentView(c)
	var f []protocol.Field
	add := func(k, val string) { f = append(f, protocol.Field{Key: k, Value: val}) }
	if v.Owner != "" {
		add("owner", v.Owner)
		add("since", seconds(e.now.Sub(v.Since), false))
		if v.HasProgress {
			add("progress", strconv.Itoa(v.Progress)+"%")
			add("progress_age", seconds(e.now.Sub(v.ProgressAt), false))
		}
		if v.PR != "" {
			add("pr", v.PR)
		}
	}
	if v.Next != "" {
		add("next", v.Next)
		if e.frozen() {
			add("in", "paused")
		} else {
			add("in", seconds(v.Deadline.Sub(e.now), true))
		}
	}
	for _, kv := range [][2]string{{"audits", v.Audits}, {"ci", v.CI}, {"conflicts", v.Conflicts},
		{"waits", strings.Join(v.Waits, ",")}, {"pushback", v.Pushback}, {"barred", strings.Join(v.Barred, ",")},
		{"timed_out", strings.Join(v.TimedOut, ",")}, {"escalation", v.Escalation}} {
		if kv[1] != "" {
			add(kv[0], kv[1])
		}
	}
	if v.Approved {
		add("approved", "yes")
		if v.ApprovedBy != "" {
			add("approved_by", v.ApprovedBy)
		}
	}
	if v.BuiltBy != "" {
		add("built_by", v.BuiltBy)
	}
	if c.state == Pending && e.halted != nil {
		add("halted", "cycle")
	}
	if e.paused {
		add("paused", "yes")
	}
	// Last, so that a reader who knows the fields above reads them where
	// it always did.
	if v.Branch != "" {
		add("branch", v.Branch)
	}
	if len(v.Overlaps) > 0 {
		add("overlaps", strings.Join(v.Overlaps, ","))
	}
	if !v.Spent.IsZero() || v.Budget != nil {
		add("spent", protocol.FormatUSD(v.Spent.USD))
		add("tokens", strconv.FormatInt(v.Spent.Tokens, 10))
	}
	if b := v.Budget; b != nil {
		add("budget", b.String())
	}
	return protocol.StatusLine(c.name, v.State, f)
}

// seconds formats an age or a time left in whole seconds, as people read a
// board: an age rounded, a time left rounded up, so it never reads 0s
// before the deadline has passed.
func seconds(d time.Duration, up bool) string {
	if up && d%time.Second != 0 {
		d = d.Truncate(time.Second) + time.Second
	}
	return short(d.Round(time.Second))
}

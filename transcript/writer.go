package transcript

import (
	"bufio"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/protocol"
)

// Writer records a session as a transcript that Replay reproduces: the
// directives first, then every line heard and said, as it happens.
type Writer struct {
	w           *bufio.Writer
	coordinator string
	names       map[string]string // the display name each sender id has in the recording, as !members showed it
	err         error
}

// NewWriter starts a transcript of a build configured as cfg.
func NewWriter(w io.Writer, cfg coordinator.Config) *Writer {
	tw := &Writer{w: bufio.NewWriter(w), coordinator: cfg.Self, names: map[string]string{}}
	if tw.coordinator == "" {
		tw.coordinator = DefaultCoordinator
	}
	tw.printf("# recorded by foreman; replay with: foreman replay FILE\n")
	tw.printf("!build %s\n", cfg.Build)
	tw.printf("!coordinator %s\n", strings.Join(append([]string{tw.coordinator}, otherMentions(cfg)...), " "))
	for _, c := range cfg.Components {
		tw.printf("!component %s\n", strings.TrimSpace(c.Name+" "+strings.Join(c.Deps, " ")))
	}
	for _, r := range []struct {
		name string
		ids  []string
	}{{"operator", cfg.Roles.Operators}, {"auditor", cfg.Roles.Auditors}, {"ci", cfg.Roles.CI}, {"merger", cfg.Roles.Merger}} {
		if len(r.ids) > 0 {
			tw.printf("!role %s %s\n", r.name, strings.Join(r.ids, " "))
		}
	}
	defaults := coordinator.DefaultRules()
	var set []string
	for _, k := range coordinator.RuleKeys() {
		v, _ := cfg.Rules.Get(k)
		if d, _ := defaults.Get(k); v != d {
			set = append(set, k+"="+v)
		}
	}
	if len(set) > 0 {
		tw.printf("!set %s\n", strings.Join(set, " "))
	}
	return tw
}

// AppendWriter goes on with a transcript NewWriter began, after a restart:
// it writes no directives.
func AppendWriter(w io.Writer, coordinatorID string) *Writer {
	return &Writer{w: bufio.NewWriter(w), coordinator: coordinatorID, names: map[string]string{}}
}

func otherMentions(cfg coordinator.Config) []string {
	var out []string
	for _, m := range cfg.Mentions {
		if m != cfg.Self {
			out = append(out, m)
		}
	}
	return out
}

// Heard records a line from sender.
func (tw *Writer) Heard(at time.Duration, sender, line string) {
	if line = strings.TrimSpace(line); line != "" {
		tw.printf("%s %s %s\n", FormatTime(at), protocol.CleanWord(sender, protocol.MaxName), line)
	}
}

// Members records that the room showed members in the channel
// (coordinator.KindMembers), leaving out those the recording already shows
// so; nothing if none is left.
func (tw *Writer) Members(at time.Duration, ms []coordinator.Member) {
	var parts []string
	for _, m := range ms {
		if p, ok := tw.member(m.ID, m.Name); ok {
			parts = append(parts, p)
		}
	}
	if len(parts) > 0 {
		tw.printf("!members %s %s\n", FormatTime(at), strings.Join(parts, " "))
	}
}

// Named records, before the lines heard from id, the display name they
// came with, unless the recording already shows id so: a replay then
// knows the name (which an operator's REJECT may quote) as the live
// engine did. Lines in a transcript carry no names.
func (tw *Writer) Named(at time.Duration, id, name string) {
	if name == "" {
		return
	}
	if p, ok := tw.member(id, name); ok {
		tw.printf("!members %s %s\n", FormatTime(at), p)
	}
}

// member is one member as !members writes it, "@id" or "@id=name", and
// whether it says anything the recording does not show yet. The name is
// kept one word, as the engine keeps it.
func (tw *Writer) member(id, name string) (string, bool) {
	id = protocol.CleanWord(id, protocol.MaxName)
	if !protocol.ValidAgent(id) {
		return "", false // no one an operator could name; the engine leaves it out
	}
	name = coordinator.DisplayName(name)
	if old, ok := tw.names[id]; ok && (name == "" || name == old) {
		return "", false
	}
	tw.names[id] = name
	if name == "" {
		return id, true
	}
	return id + "=" + name, true
}

// ClaimAgain records those whose CLAIM came before the coordinator joined,
// whom its first TASKS tells to claim again; nothing if none.
func (tw *Writer) ClaimAgain(ids []string) {
	var clean []string
	for _, id := range ids {
		if id = protocol.CleanWord(id, protocol.MaxName); protocol.ValidAgent(id) {
			clean = append(clean, id)
		}
	}
	if len(clean) > 0 {
		tw.printf("!claim-again %s\n", strings.Join(clean, " "))
	}
}

// Said records lines the coordinator said.
func (tw *Writer) Said(at time.Duration, lines []string) {
	for _, l := range lines {
		tw.printf("%s %s %s\n", FormatTime(at), tw.coordinator, l)
	}
}

// Downtime records that the coordinator was away from from to to.
func (tw *Writer) Downtime(from, to time.Duration) {
	tw.printf("!downtime %s %s\n", FormatTime(from), FormatTime(to))
}

// Reload records that the components, and the roles if not nil, were
// reloaded at at.
func (tw *Writer) Reload(at time.Duration, comps []coordinator.Component, roles *coordinator.Roles) {
	var parts []string
	for _, c := range comps {
		p := c.Name
		if len(c.Deps) > 0 {
			p += "=" + strings.Join(c.Deps, ",")
		}
		parts = append(parts, p)
	}
	if roles != nil {
		for _, r := range []struct {
			kind string
			ids  []string
		}{{"operator", roles.Operators}, {"auditor", roles.Auditors}, {"ci", roles.CI}, {"merger", roles.Merger}} {
			parts = append(parts, "role:"+r.kind+"="+strings.Join(r.ids, ","))
		}
	}
	tw.printf("!reload %s %s\n", FormatTime(at), strings.Join(parts, " "))
}

// Offline records that the coordinator's replies could not reach the room
// from at.
func (tw *Writer) Offline(at time.Duration) { tw.printf("!offline %s\n", FormatTime(at)) }

// Online records that they could again from at.
func (tw *Writer) Online(at time.Duration) { tw.printf("!online %s\n", FormatTime(at)) }

// Gap records that, at at, the room's history had lost lines said between
// since and until.
func (tw *Writer) Gap(at, since, until time.Duration) {
	tw.printf("!gap %s %s %s\n", FormatTime(at), FormatTime(since), FormatTime(until))
}

// Spend records spend an agent's exporter reported, received at at; start
// is the build's start, from which the spend's own times are written.
func (tw *Writer) Spend(at time.Duration, start time.Time, s coordinator.Spend) {
	src := map[coordinator.SpendSource]string{coordinator.SpendRequest: "request", coordinator.SpendDelta: "delta",
		coordinator.SpendCumulative: "cumulative"}[s.Source]
	line := fmt.Sprintf("!spend %s %s %s at=%s", FormatTime(at), s.Agent, src, FormatOffset(s.At.Sub(start)))
	if s.Series != "" {
		line += fmt.Sprintf(" series=%s start=%s", url.PathEscape(s.Series), FormatOffset(s.Start.Sub(start)))
	}
	if s.ID != "" {
		line += " id=" + url.PathEscape(s.ID)
	}
	line += " " + protocol.FormatUSD(s.Cost.USD)[1:]
	if s.Cost.Tokens > 0 {
		line += " " + protocol.FormatTokens(s.Cost.Tokens)
	}
	tw.printf("%s\n", line)
}

// Comment records a comment line.
func (tw *Writer) Comment(text string) {
	tw.printf("# %s\n", protocol.CleanText(text, 1000))
}

// Flush writes what is buffered and returns the first error met.
func (tw *Writer) Flush() error {
	if tw.err == nil {
		tw.err = tw.w.Flush()
	}
	return tw.err
}

func (tw *Writer) printf(format string, args ...any) {
	if tw.err == nil {
		_, tw.err = fmt.Fprintf(tw.w, format, args...)
	}
}

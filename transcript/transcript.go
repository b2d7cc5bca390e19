// Package transcript reads, replays and writes transcripts (contract
// section 9): a chat session as text, one line per chat line,
//
//	HH:MM:SS[.mmm] <sender> <line>
//
// timed from the start of the build, with directives that set up the build.
// Lines from the coordinator are what it said, or, when replaying, what it
// must say.
package transcript

import (
	"bufio"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/protocol"
)

// DefaultCoordinator is the coordinator's sender id when a transcript has no
// !coordinator directive.
const DefaultCoordinator = "@foreman"

// Transcript is a parsed transcript file.
type Transcript struct {
	Name        string // file name, for messages
	Build       string
	Coordinator string
	Mentions    []string // more names the coordinator answers to (!coordinator @id @name...)
	Components  []coordinator.Component
	Roles       coordinator.Roles
	Rules       coordinator.Rules
	Ignore      map[string]bool // coordinator verbs that may appear unlisted
	End         time.Duration   // !end, or 0
	Lines       []Line          // timed lines in file order
	Raw         []string        // the file's lines, for rewriting
	Timed       []Timed         // foreman's own recordings: what happened besides lines, in file order
	ClaimAgain  []string        // !claim-again: those whose CLAIM came before the coordinator joined
}

// Timed is one of the directives foreman's recorder writes for what
// happened to the coordinator besides the lines it heard. Unlike the
// standard directives they stand where they happened, between lines:
//
//	!downtime FROM TO          foreman was away (a restart): a pause
//	!reload HH:MM:SS c1 c2=dep1,dep2 ... [role:operator=@a,@b ...]
//	                                       the components (the whole new list) and, if
//	                                       any role: word is given, the roles were reloaded
//	!offline HH:MM:SS          its replies could not reach the room from then (lurking, cut off)
//	!online HH:MM:SS           they could again
//	!gap HH:MM:SS SINCE UNTIL  the room's history had lost lines said between SINCE and UNTIL
//	!members HH:MM:SS @id[=name]...
//	                           the room showed these members, with their display names: in
//	                           the channel (its member list, someone joining), or as the
//	                           name a sender's lines came with; an operator may ASSIGN to them
//	!spend HH:MM:SS @id request|delta|cumulative [at=HH:MM:SS] [series=NAME start=HH:MM:SS] [id=ID] AMOUNT...
//	                           the agent's exporter reported spend, received then: AMOUNT is USD
//	                           (0.50) or tokens (1200t); at= is the request's or the point's own
//	                           time (default: when received); a cumulative point names its series,
//	                           a delta one may; id= is a request's identity; at= and start= may be
//	                           before the build's start, written -HH:MM:SS
type Timed struct {
	Kind       coordinator.Kind
	At         time.Duration
	From       time.Duration // !downtime: away from
	Since      time.Duration // !gap
	Until      time.Duration // !gap
	Components []coordinator.Component
	Roles      *coordinator.Roles   // !reload with role:KIND=@a,@b words: the roles as reloaded
	Members    []coordinator.Member // !members
	Spend      coordinator.Spend    // !spend, its times from Epoch
	Before     int                  // the index in Lines of the line it comes before
	Pos        int
}

// Line is one timed chat line.
type Line struct {
	At     time.Duration
	Sender string
	Text   string
	Said   bool // the coordinator's line
	Pos    int  // 1-based line number in the file
}

// Error is a problem in a transcript, at file:line.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// Parse reads a transcript.
func Parse(name string, r io.Reader) (*Transcript, error) {
	t := &Transcript{Name: name, Build: "build", Coordinator: DefaultCoordinator,
		Rules: coordinator.DefaultRules(), Ignore: map[string]bool{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4<<20)
	var compPos []int
	var last time.Duration
	for n := 1; sc.Scan(); n++ {
		raw := sc.Text()
		t.Raw = append(t.Raw, raw)
		s := strings.TrimSpace(raw)
		fail := func(format string, args ...any) error {
			return &Error{File: name, Line: n, Msg: fmt.Sprintf(format, args...)}
		}
		switch {
		case s == "" || strings.HasPrefix(s, "#"):
			continue
		case strings.HasPrefix(s, "!"):
			before := len(t.Timed)
			pos, err := t.directive(s)
			if err != nil {
				return nil, fail("%v", err)
			}
			if pos {
				compPos = append(compPos, n)
			}
			if len(t.Timed) > before {
				d := &t.Timed[before]
				d.Before, d.Pos = len(t.Lines), n
				if d.From < last {
					return nil, fail("%s happens before the previous line's time %s; times must not decrease", strings.Fields(s)[0], FormatTime(last))
				}
				last = d.At
			}
			continue
		}
		stamp, rest, _ := strings.Cut(s, " ")
		at, err := ParseTime(stamp)
		if err != nil {
			return nil, fail("%v", err)
		}
		if at < last {
			return nil, fail("time %s is before the previous line's %s; times must not decrease", stamp, FormatTime(last))
		}
		last = at
		sender, text, _ := strings.Cut(strings.TrimSpace(rest), " ")
		if sender == "" {
			return nil, fail("missing sender after the time")
		}
		t.Lines = append(t.Lines, Line{At: at, Sender: sender, Text: strings.TrimSpace(text), Pos: n})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for i := range t.Lines {
		t.Lines[i].Said = t.Lines[i].Sender == t.Coordinator
	}
	if err := t.checkComponents(compPos); err != nil {
		return nil, err
	}
	return t, nil
}

// directive applies one "!" line. It reports whether the line declared a
// component, so that errors about components can point at it.
func (t *Transcript) directive(s string) (component bool, err error) {
	fields := strings.Fields(s)
	name, args := fields[0], fields[1:]
	need := func(n int, usage string) error {
		if len(args) < n {
			return fmt.Errorf("usage: %s", usage)
		}
		return nil
	}
	switch name {
	case "!build":
		if err := need(1, "!build <name>"); err != nil {
			return false, err
		}
		t.Build = args[0]
	case "!coordinator":
		if err := need(1, "!coordinator <@id>"); err != nil {
			return false, err
		}
		t.Coordinator, t.Mentions = args[0], args[1:]
	case "!component":
		if err := need(1, "!component <c> [dep...]"); err != nil {
			return false, err
		}
		t.Components = append(t.Components, coordinator.Component{Name: args[0], Deps: args[1:]})
		return true, nil
	case "!role":
		if err := need(2, "!role operator|auditor|ci|merger <@id>..."); err != nil {
			return false, err
		}
		if err := addRole(&t.Roles, args[0], strings.Join(args[1:], ",")); err != nil {
			return false, err
		}
	case "!set":
		if err := need(1, "!set <key>=<value>..."); err != nil {
			return false, err
		}
		for _, kv := range args {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return false, fmt.Errorf("%q is not key=value", kv)
			}
			if err := t.Rules.Set(k, v); err != nil {
				return false, err
			}
		}
	case "!ignore":
		if err := need(1, "!ignore <VERB>..."); err != nil {
			return false, err
		}
		for _, v := range args {
			t.Ignore[strings.ToUpper(v)] = true
		}
	case "!end":
		if err := need(1, "!end HH:MM:SS"); err != nil {
			return false, err
		}
		d, err := ParseTime(args[0])
		if err != nil {
			return false, err
		}
		t.End = d
	case "!downtime":
		if err := need(2, "!downtime FROM TO"); err != nil {
			return false, err
		}
		from, err1 := ParseTime(args[0])
		to, err2 := ParseTime(args[1])
		if err1 != nil || err2 != nil || to < from {
			return false, fmt.Errorf("!downtime needs two times, the second not before the first")
		}
		t.Timed = append(t.Timed, Timed{Kind: coordinator.KindRecover, At: to, From: from})
	case "!reload":
		if err := need(2, "!reload HH:MM:SS c[=dep,dep]..."); err != nil {
			return false, err
		}
		at, err := ParseTime(args[0])
		if err != nil {
			return false, err
		}
		r := Timed{Kind: coordinator.KindReload, At: at, From: at}
		for _, a := range args[1:] {
			if kind, ids, ok := strings.Cut(a, "="); ok && strings.HasPrefix(kind, "role:") {
				if r.Roles == nil {
					r.Roles = &coordinator.Roles{}
				}
				if err := addRole(r.Roles, strings.TrimPrefix(kind, "role:"), ids); err != nil {
					return false, err
				}
				continue
			}
			name, deps, _ := strings.Cut(a, "=")
			c := coordinator.Component{Name: name}
			if deps != "" {
				c.Deps = strings.Split(deps, ",")
			}
			r.Components = append(r.Components, c)
		}
		t.Timed = append(t.Timed, r)
	case "!offline", "!online":
		if err := need(1, name+" HH:MM:SS"); err != nil {
			return false, err
		}
		at, err := ParseTime(args[0])
		if err != nil {
			return false, err
		}
		kind := coordinator.KindOffline
		if name == "!online" {
			kind = coordinator.KindOnline
		}
		t.Timed = append(t.Timed, Timed{Kind: kind, At: at, From: at})
	case "!gap":
		if err := need(3, "!gap HH:MM:SS SINCE UNTIL"); err != nil {
			return false, err
		}
		var v [3]time.Duration
		for i := range v {
			if v[i], err = ParseTime(args[i]); err != nil {
				return false, err
			}
		}
		t.Timed = append(t.Timed, Timed{Kind: coordinator.KindGap, At: v[0], From: v[0], Since: v[1], Until: v[2]})
	case "!claim-again":
		if err := need(1, "!claim-again @id..."); err != nil {
			return false, err
		}
		for _, id := range args {
			if !protocol.ValidAgent(id) {
				return false, fmt.Errorf("!claim-again: %q is not a sender id (@ and a word)", id)
			}
		}
		t.ClaimAgain = append(t.ClaimAgain, args...)
	case "!members":
		if err := need(2, "!members HH:MM:SS @id[=name]..."); err != nil {
			return false, err
		}
		at, err := ParseTime(args[0])
		if err != nil {
			return false, err
		}
		m := Timed{Kind: coordinator.KindMembers, At: at, From: at}
		for _, a := range args[1:] {
			id, name, _ := strings.Cut(a, "=")
			if !protocol.ValidAgent(id) {
				return false, fmt.Errorf("!members: %q is not a sender id (@ and a word)", id)
			}
			m.Members = append(m.Members, coordinator.Member{ID: id, Name: name, Verified: true})
		}
		t.Timed = append(t.Timed, m)
	case "!spend":
		d, err := parseSpend(args)
		if err != nil {
			return false, err
		}
		t.Timed = append(t.Timed, d)
	default:
		return false, fmt.Errorf("unknown directive %s (known: !build !coordinator !component !role !set !ignore !end, and foreman's own !downtime !reload !offline !online !gap !members !claim-again !spend)", name)
	}
	return false, nil
}

// checkComponents checks the declared graph the way the engine will,
// pointing at the directive at fault.
func (t *Transcript) checkComponents(pos []int) error {
	seen := map[string]bool{}
	for i, c := range t.Components {
		if !protocol.ValidComponent(c.Name) {
			return &Error{t.Name, pos[i], fmt.Sprintf("%q is not a component name", c.Name)}
		}
		if seen[c.Name] {
			return &Error{t.Name, pos[i], fmt.Sprintf("component %s is declared twice", c.Name)}
		}
		seen[c.Name] = true
	}
	for i, c := range t.Components {
		for _, d := range c.Deps {
			if !seen[d] {
				return &Error{t.Name, pos[i], fmt.Sprintf("%s depends on %s, which no !component declares", c.Name, d)}
			}
		}
	}
	return nil
}

// Config is the engine configuration the transcript's directives describe.
func (t *Transcript) Config() coordinator.Config {
	return coordinator.Config{
		Build:      t.Build,
		Self:       t.Coordinator,
		Mentions:   append([]string{t.Coordinator}, t.Mentions...),
		Components: t.Components,
		Roles:      t.Roles,
		Rules:      t.Rules,
	}
}

// ParseTime reads HH:MM:SS or HH:MM:SS.mmm as time since the build started.
func ParseTime(s string) (time.Duration, error) {
	d, ok := parseTime(s)
	if !ok {
		return 0, fmt.Errorf("%q is not a time HH:MM:SS[.mmm]", s)
	}
	return d, nil
}

func parseTime(s string) (time.Duration, bool) {
	hms, frac, hasFrac := strings.Cut(s, ".")
	var v [3]int
	for i := range v {
		p := hms
		if i < 2 {
			var ok bool
			if p, hms, ok = strings.Cut(hms, ":"); !ok {
				return 0, false
			}
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || len(p) < 2 || i > 0 && (len(p) != 2 || n > 59) {
			return 0, false
		}
		v[i] = n
	}
	d := time.Duration(v[0])*time.Hour + time.Duration(v[1])*time.Minute + time.Duration(v[2])*time.Second
	if hasFrac {
		ms, err := strconv.Atoi(frac)
		if len(frac) != 3 || err != nil || ms < 0 {
			return 0, false
		}
		d += time.Duration(ms) * time.Millisecond
	}
	return d, true
}

// FormatTime writes d as HH:MM:SS, with .mmm when it has milliseconds.
// Anything finer than a millisecond is dropped.
func FormatTime(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	ms := int64(d / time.Millisecond)
	s := fmt.Sprintf("%02d:%02d:%02d", ms/3600000, ms/60000%60, ms/1000%60)
	if ms%1000 != 0 {
		s += fmt.Sprintf(".%03d", ms%1000)
	}
	return s
}

// FormatOffset writes d as FormatTime does, with a leading - when it is
// negative: a time an agent reported may be before the build's start, and
// a replay must read back the time the engine was handed.
func FormatOffset(d time.Duration) string {
	if d < 0 {
		return "-" + FormatTime(-d)
	}
	return FormatTime(d)
}

// parseOffset reads what FormatOffset writes.
func parseOffset(s string) (time.Duration, error) {
	if rest, neg := strings.CutPrefix(s, "-"); neg {
		d, err := ParseTime(rest)
		return -d, err
	}
	return ParseTime(s)
}

// addRole adds the comma-separated ids to the role named kind.
func addRole(r *coordinator.Roles, kind, ids string) error {
	var dst *[]string
	switch kind {
	case "operator":
		dst = &r.Operators
	case "auditor":
		dst = &r.Auditors
	case "ci":
		dst = &r.CI
	case "merger":
		dst = &r.Merger
	default:
		return fmt.Errorf("unknown role %q (operator, auditor, ci or merger)", kind)
	}
	for _, id := range strings.Split(ids, ",") {
		if id != "" {
			*dst = append(*dst, id)
		}
	}
	return nil
}

const spendUsage = "!spend HH:MM:SS @id request|delta|cumulative [at=[-]HH:MM:SS] [series=NAME start=[-]HH:MM:SS] [id=ID] AMOUNT... (0.50 for USD, 1200t for tokens)"

// parseSpend reads the arguments of a !spend directive.
func parseSpend(args []string) (Timed, error) {
	if len(args) < 4 {
		return Timed{}, fmt.Errorf("usage: %s", spendUsage)
	}
	at, err := ParseTime(args[0])
	if err != nil {
		return Timed{}, err
	}
	d := Timed{Kind: coordinator.KindSpend, At: at, From: at}
	s := &d.Spend
	s.Agent, s.At = args[1], Epoch.Add(at)
	if !protocol.ValidAgent(s.Agent) {
		return Timed{}, fmt.Errorf("!spend: %q is not a sender id (@ and a word)", s.Agent)
	}
	src, ok := map[string]coordinator.SpendSource{"request": coordinator.SpendRequest, "delta": coordinator.SpendDelta,
		"cumulative": coordinator.SpendCumulative}[args[2]]
	if !ok {
		return Timed{}, fmt.Errorf("!spend: %q is not request, delta or cumulative", args[2])
	}
	s.Source = src
	for _, a := range args[3:] {
		switch k, v, _ := strings.Cut(a, "="); k {
		case "at", "start":
			t, err := parseOffset(v)
			if err != nil {
				return Timed{}, fmt.Errorf("!spend %s=: %w", k, err)
			}
			if k == "at" {
				s.At = Epoch.Add(t)
			} else {
				s.Start = Epoch.Add(t)
			}
		case "series":
			if s.Series, err = url.PathUnescape(v); err != nil {
				return Timed{}, fmt.Errorf("!spend series=: %w", err)
			}
		case "id":
			if s.ID, err = url.PathUnescape(v); err != nil {
				return Timed{}, fmt.Errorf("!spend id=: %w", err)
			}
		default:
			amount, err := protocol.ParseAmount(a)
			if err != nil || amount.Raise || amount.None {
				return Timed{}, fmt.Errorf("!spend: %q is not an amount; usage: %s", a, spendUsage)
			}
			if amount.Tokens {
				s.Cost.Tokens += amount.Value
			} else {
				s.Cost.USD += amount.Value
			}
		}
	}
	if src == coordinator.SpendCumulative && s.Series == "" {
		return Timed{}, fmt.Errorf("!spend: a cumulative point names its series=; usage: %s", spendUsage)
	}
	return d, nil
}

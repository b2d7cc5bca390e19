package protocol

import (
	"fmt"
	"strings"
)

// MaxComponent is the longest component name, in bytes.
const MaxComponent = 64

// Reader reads chat lines into commands.
type Reader struct {
	// Mentions are the names the bot answers to, such as "@foreman" and its
	// sender id. A line may start with one of them ("@foreman CLAIM api").
	Mentions []string
}

// Read reads one line. Chat (anything whose first word is not a verb, and
// every quoted line) gives a Command with Verb NoVerb and a nil error. A
// protocol line with wrong arguments gives its verb and a *ParseError.
//
// One wrong argument spares the rest of the line: a PROGRESS whose note
// names a bad ref (branch=-x) gives the command as read without the
// branch, and a *ParseError whose CheckIn is true. It is answered with
// ERROR and still counts as a check-in (contract section 10): a builder
// who mistyped its branch has not gone silent.
func (r Reader) Read(line string) (Command, error) {
	s, ok := undecorate(line, r.Mentions)
	if !ok {
		return Command{}, nil
	}
	sc := scanner{rest: s}
	verb, ok := LookupVerb(sc.word())
	if !ok {
		return Command{}, nil
	}
	p := parser{sc: sc, cmd: Command{Verb: verb}}
	p.parse()
	if p.err != nil {
		if p.err.CheckIn() {
			return p.cmd, p.err
		}
		return Command{Verb: verb}, p.err
	}
	return p.cmd, nil
}

// Read reads a line with no mentions to strip.
func Read(line string) (Command, error) { return Reader{}.Read(line) }

// ReadConfirmed reads the command an OK confirms: OK's text is the command
// as read, which the coordinator may follow with more after a space (OK
// RELEASE api from @b1). Words past a command's last argument are that
// more, not an error; every other problem is.
func ReadConfirmed(text string) (Command, error) {
	sc := scanner{rest: strings.TrimSpace(text)}
	word := sc.word()
	verb, ok := LookupVerb(word)
	if !ok {
		return Command{}, fmt.Errorf("%q is not a command verb", word)
	}
	p := parser{sc: sc, cmd: Command{Verb: verb}}
	p.parse()
	if p.err != nil && p.err.Problem != ExtraArgument {
		return Command{Verb: verb}, p.err
	}
	return p.cmd, nil
}

// parser reads one verb's arguments; the first problem found sticks.
type parser struct {
	sc  scanner
	cmd Command
	err *ParseError
}

func (p *parser) parse() {
	c := &p.cmd
	switch c.Verb {
	case Claim, Release, Override, Merged:
		c.Component = p.component("<c>")
		p.end()
	case Progress:
		c.Component = p.component("<c>")
		c.Percent = p.percent()
		p.progressNote()
	case Blocked:
		c.Component = p.component("<c>")
		c.Dep = p.component("<dep>")
		c.Text = p.text(false)
	case Conflict:
		c.Component = p.component("<c>")
		c.Other = p.component("<other>")
		c.Kind = p.conflictKind()
		c.Text = p.text(false)
	case Ready:
		c.Component = p.component("<c>")
		c.PR = p.token("<pr-url-or-branch>")
		p.end()
	case Abort:
		c.Component = p.component("<c>")
		c.Text = p.text(true)
	case Audit:
		c.Component = p.component("<c>")
		c.Verdict = p.verdict(false)
		c.Text = p.text(false)
	case CI:
		c.Component = p.component("<c>")
		c.Verdict = p.verdict(true)
		c.Text = p.text(false)
	case Overlap:
		c.Component = p.component("<c>")
		c.Other = p.component("<d>")
		c.Text = p.text(true)
	case Status:
		if w := p.sc.word(); w != "" {
			c.Component = p.checkComponent(w)
		}
		p.end()
	case Assign:
		c.Component = p.component("<c>")
		c.Agent = p.agent()
		p.end()
	case Resolve:
		c.Component = p.component("<c>")
		c.Text = p.text(false)
	case Depend, Undepend:
		c.Component = p.component("<c>")
		c.Dep = p.component("<dep>")
		p.end()
	case Add:
		c.Component = p.component("<c>")
		for w := p.sc.word(); w != "" && p.err == nil; w = p.sc.word() {
			c.Deps = append(c.Deps, p.checkComponent(w))
		}
	case Pause, Resume:
		p.end()
	case Budget:
		p.budgetTarget()
		c.Amount = p.amount()
		c.Text = p.text(false)
	}
}

// budgetTarget reads whose budget a BUDGET line sets: a component, an
// agent (@a) or the build.
func (p *parser) budgetTarget() {
	w := p.next("<c|@a|build>")
	switch {
	case p.err != nil:
	case strings.HasPrefix(w, "@"):
		if !ValidAgent(w) {
			p.fail(BadAgent, w, "")
			return
		}
		p.cmd.Agent = w
	case strings.EqualFold(w, BuildSubject):
		p.cmd.Component = BuildSubject
	default:
		p.cmd.Component = p.checkComponent(w)
	}
}

func (p *parser) amount() Amount {
	w := p.next("<amount>")
	if p.err != nil {
		return Amount{}
	}
	a, err := ParseAmount(w)
	if err != nil {
		p.fail(BadAmount, w, "")
	}
	return a
}

func (p *parser) fail(problem Problem, arg, want string) {
	if p.err == nil {
		p.err = &ParseError{Verb: p.cmd.Verb, Problem: problem, Arg: CleanText(arg, 40), Want: want}
	}
}

// next returns the next word, or records that the argument want is missing.
func (p *parser) next(want string) string {
	if p.err != nil {
		return ""
	}
	w := p.sc.word()
	if w == "" {
		p.fail(MissingArgument, "", want)
	}
	return w
}

func (p *parser) component(want string) string {
	w := p.next(want)
	if p.err != nil {
		return ""
	}
	return p.checkComponent(w)
}

func (p *parser) checkComponent(w string) string {
	if len(w) > MaxComponent {
		p.fail(ComponentTooLong, w, "")
		return ""
	}
	if !validName(w) {
		p.fail(BadComponent, w, "")
		return ""
	}
	if Reserved(w) {
		p.fail(ReservedName, w, "")
		return ""
	}
	return w
}

// token reads a word that may hold anything printable, such as a PR URL.
func (p *parser) token(want string) string {
	w := p.next(want)
	if p.err != nil {
		return ""
	}
	if len(w) > MaxText || CleanText(w, MaxText) != w {
		p.fail(Unprintable, w, want)
		return ""
	}
	return w
}

func (p *parser) percent() int {
	w := p.next("<pct>")
	if p.err != nil {
		return 0
	}
	digits := strings.TrimSuffix(w, "%")
	n := 0
	for i := 0; i < len(digits); i++ {
		d := digits[i]
		if d < '0' || d > '9' || n > 100 {
			n = -1
			break
		}
		n = n*10 + int(d-'0')
	}
	if digits == "" || n < 0 || n > 100 {
		p.fail(BadPercent, w, "")
		return 0
	}
	return n
}

func (p *parser) verdict(ci bool) Verdict {
	want := "PASS|FAIL"
	if ci {
		want = "PASS|FAIL|CONFLICT"
	}
	w := p.next(want)
	switch {
	case p.err != nil:
		return NoVerdict
	case len(w) == 4 && equalFoldASCII("PASS", w):
		return Pass
	case len(w) == 4 && equalFoldASCII("FAIL", w):
		return Fail
	case ci && len(w) == 8 && equalFoldASCII("CONFLICT", w):
		return MergeConflict
	}
	p.fail(BadVerdict, w, want)
	return NoVerdict
}

func (p *parser) conflictKind() ConflictKind {
	w := p.next("files|interface")
	switch {
	case p.err != nil:
		return NoKind
	case strings.EqualFold(w, "files"):
		return Files
	case strings.EqualFold(w, "interface"):
		return Interface
	}
	p.fail(BadConflictKind, w, "files|interface")
	return NoKind
}

func (p *parser) agent() string {
	w := p.next("<@agent>")
	if p.err == nil && !ValidAgent(w) {
		p.fail(BadAgent, w, "")
		return ""
	}
	return w
}

// text reads the free-text tail, made safe to store and echo.
func (p *parser) text(required bool) string {
	if p.err != nil {
		return ""
	}
	t := strings.TrimSpace(CleanText(p.sc.tail(), MaxText))
	if required && t == "" {
		want := "<reason>"
		if p.cmd.Verb == Overlap {
			want = "<files>"
		}
		p.fail(MissingArgument, "", want)
	}
	return t
}

// BranchKey starts the word of a PROGRESS note that names where the work
// is (contract section 10): branch=<ref>, the note's first word.
const BranchKey = "branch="

// progressNote reads PROGRESS's note: a first word branch=<ref> is the
// branch, checked as READY's ref is (CheckRef); the rest is the note. The
// word is told apart on the note as cleaned, and the ref checked as the
// sender wrote it, so a control character in it is refused, never turned
// into a space that makes another name. A bad ref loses only the branch:
// the line still counts (ParseError.CheckIn).
func (p *parser) progressNote() {
	if p.err != nil {
		return
	}
	raw := p.sc.tail()
	text := strings.TrimSpace(CleanText(raw, MaxText))
	first, rest := cutWord(text)
	if !hasBranchKey(first) {
		p.cmd.Text = text
		return
	}
	p.cmd.Text = rest
	ref, _ := cutWord(raw)
	if hasBranchKey(ref) {
		ref = ref[len(BranchKey):]
	}
	if _, err := checkRef(ref, true); err != nil {
		p.fail(BadRef, ref, err.Error())
		return
	}
	p.cmd.Branch = ref
}

func hasBranchKey(w string) bool {
	return len(w) >= len(BranchKey) && strings.EqualFold(w[:len(BranchKey)], BranchKey)
}

// cutWord splits off the first word of s, as the scanner splits words.
func cutWord(s string) (word, rest string) {
	sc := scanner{rest: s}
	word = sc.word()
	return word, sc.tail()
}

// end records an error if anything follows the last argument.
func (p *parser) end() {
	if p.err != nil {
		return
	}
	if w := p.sc.word(); w != "" {
		p.fail(ExtraArgument, w, "")
	}
}

// ValidComponent reports whether name is a component name: a word of
// [A-Za-z0-9][A-Za-z0-9._/-]* of at most MaxComponent bytes that is not
// Reserved.
func ValidComponent(name string) bool { return validName(name) && !Reserved(name) }

// Reserved reports whether name, whatever its case, is a verb (the bot's or
// anyone's) or "build": a component so named would make lines ambiguous
// ("ESCALATE build ..." is about the whole build; contract section 3).
func Reserved(name string) bool {
	if len(name) > len("UNBLOCKED") {
		return false // longer than every verb
	}
	if strings.EqualFold(name, BuildSubject) {
		return true
	}
	if _, ok := LookupVerb(name); ok {
		return true
	}
	for v := ReplyTasks; v < numReplyVerbs; v++ {
		if len(name) == len(replyNames[v]) && equalFoldASCII(replyNames[v], name) {
			return true
		}
	}
	return false
}

func validName(name string) bool {
	if name == "" || len(name) > MaxComponent || !isAlnum(name[0]) {
		return false
	}
	for i := 1; i < len(name); i++ {
		if c := name[i]; !isAlnum(c) && c != '.' && c != '_' && c != '/' && c != '-' {
			return false
		}
	}
	return true
}

// ValidAgent reports whether id looks like a sender id: "@" and a word of
// [A-Za-z0-9._-], at most MaxName bytes.
func ValidAgent(id string) bool {
	if len(id) < 2 || len(id) > MaxName || id[0] != '@' {
		return false
	}
	for i := 1; i < len(id); i++ {
		if c := id[i]; !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// Problem is what is wrong with a protocol line.
type Problem uint8

// Problems a protocol line can have.
const (
	MissingArgument Problem = iota + 1
	ExtraArgument
	BadComponent
	ComponentTooLong
	BadPercent
	BadVerdict
	BadConflictKind
	BadAgent
	Unprintable
	ReservedName
	BadRef // PROGRESS's branch=: the rest of the line stands
	BadAmount
)

// ParseError is a protocol line with wrong arguments. Its message says what
// is wrong and gives the verb's usage; the coordinator answers it as
// "ERROR <sender> <message>".
type ParseError struct {
	Verb    Verb
	Problem Problem
	Arg     string // the offending argument, cleaned and bounded
	Want    string // what was expected instead, when that helps; BadRef: why the ref is bad
}

// CheckIn reports whether the line is handled all the same, without the
// argument that was wrong: a PROGRESS whose branch= names a bad ref is a
// check-in (contract section 10). Read returns its command.
func (e *ParseError) CheckIn() bool { return e.Problem == BadRef }

func (e *ParseError) Error() string {
	var what string
	switch e.Problem {
	case MissingArgument:
		what = "missing " + e.Want
	case ExtraArgument:
		what = fmt.Sprintf("unexpected %q after the last argument", e.Arg)
	case BadComponent:
		what = fmt.Sprintf("%q is not a component name (letters, digits and . _ / -, starting with a letter or digit)", e.Arg)
	case ComponentTooLong:
		what = fmt.Sprintf("component name %q is longer than %d bytes", e.Arg, MaxComponent)
	case BadPercent:
		what = fmt.Sprintf("%q is not a percentage from 0 to 100", e.Arg)
	case BadVerdict:
		what = fmt.Sprintf("%q is not %s", e.Arg, e.Want)
	case BadConflictKind:
		what = fmt.Sprintf("%q is not files or interface", e.Arg)
	case BadAgent:
		what = fmt.Sprintf("%q is not a sender id like @a1b2c3", e.Arg)
	case ReservedName:
		what = fmt.Sprintf("%q is reserved (a verb, or the word build) and cannot name a component", e.Arg)
	case Unprintable:
		what = fmt.Sprintf("%s %q is too long or has control characters", e.Want, e.Arg)
	case BadAmount:
		what = fmt.Sprintf("%q is not an amount: USD (5, 2.50, $5), tokens with a t suffix (200000t), either after + to raise, or none", e.Arg)
	case BadRef:
		what = fmt.Sprintf("bad %s: %s (the line still counts as a check-in)", BranchKey, e.Want)
	default:
		what = "malformed"
	}
	return fmt.Sprintf("%s: %s; usage: %s", e.Verb, what, e.Verb.Usage())
}

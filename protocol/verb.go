// Package protocol is the grammar of foreman's chat protocol: it reads chat
// lines into typed commands and formats the coordinator's replies so that each
// is exactly one safe line. It is pure: no I/O, no clock, no state.
//
// The contract is docs/protocol.md, sections 1 to 3, and the
// lines of section 10 (work in progress, handoff and overlaps).
package protocol

// Verb is the first word of a protocol line, the one that decides what the
// line means.
type Verb uint8

// The verbs of contract section 2, in the order the contract lists them.
const (
	NoVerb Verb = iota // chat: not a protocol line
	Claim
	Progress
	Blocked
	Conflict
	Ready
	Abort
	Audit
	CI
	Overlap
	Status
	Assign
	Release
	Resolve
	Override
	Merged
	Depend
	Undepend
	Add
	Pause
	Resume
	Budget
	numVerbs
)

var verbs = [numVerbs]struct {
	name  string
	usage string
}{
	NoVerb:   {"", ""},
	Claim:    {"CLAIM", "CLAIM <c>"},
	Progress: {"PROGRESS", "PROGRESS <c> <pct>[%] [branch=<ref>] [note]"},
	Blocked:  {"BLOCKED", "BLOCKED <c> <dep> [note]"},
	Conflict: {"CONFLICT", "CONFLICT <c> <other> files|interface [details]"},
	Ready:    {"READY", "READY <c> <pr-url-or-branch>"},
	Abort:    {"ABORT", "ABORT <c> <reason>"},
	Audit:    {"AUDIT", "AUDIT <c> PASS|FAIL [details]"},
	CI:       {"CI", "CI <c> PASS|FAIL|CONFLICT [details]"},
	Overlap:  {"OVERLAP", "OVERLAP <c> <d> <files>"},
	Status:   {"STATUS", "STATUS [c]"},
	Assign:   {"ASSIGN", "ASSIGN <c> <@agent>"},
	Release:  {"RELEASE", "RELEASE <c>"},
	Resolve:  {"RESOLVE", "RESOLVE <c> [note]"},
	Override: {"OVERRIDE", "OVERRIDE <c>"},
	Merged:   {"MERGED", "MERGED <c>"},
	Depend:   {"DEPEND", "DEPEND <c> <dep>"},
	Undepend: {"UNDEPEND", "UNDEPEND <c> <dep>"},
	Add:      {"ADD", "ADD <c> [dep...]"},
	Pause:    {"PAUSE", "PAUSE"},
	Resume:   {"RESUME", "RESUME"},
	Budget:   {"BUDGET", "BUDGET <c|@a|build> <amount: 5, +5, none, 200000t> [note]"},
}

// String returns the verb as it is written: upper case.
func (v Verb) String() string {
	if v >= numVerbs {
		return "VERB(?)"
	}
	return verbs[v].name
}

// Usage returns the verb's grammar, for error messages.
func (v Verb) Usage() string {
	if v >= numVerbs {
		return ""
	}
	return verbs[v].usage
}

// IsBuilderLine reports whether only the component's owner may say it.
func (v Verb) IsBuilderLine() bool {
	switch v {
	case Progress, Blocked, Conflict, Ready, Abort:
		return true
	}
	return false
}

// IsOperatorCommand reports whether the verb is an operator command (contract
// section 2: ASSIGN through BUDGET). MERGED is one, though the merger role
// may say it too.
func (v Verb) IsOperatorCommand() bool {
	return v >= Assign && v <= Budget
}

// LookupVerb finds the verb a word names, ignoring case. It does not allocate.
func LookupVerb(word string) (Verb, bool) {
	for v := Claim; v < numVerbs; v++ {
		name := verbs[v].name
		if len(name) == len(word) && equalFoldASCII(name, word) {
			return v, true
		}
	}
	return NoVerb, false
}

// Verbs returns every verb, in contract order.
func Verbs() []Verb {
	out := make([]Verb, 0, numVerbs-1)
	for v := Claim; v < numVerbs; v++ {
		out = append(out, v)
	}
	return out
}

// equalFoldASCII compares an upper-case ASCII name with a word of the same
// length, ignoring ASCII case. Verbs are ASCII, so Unicode folding (which
// would let "ſ" match "S") is deliberately not applied.
func equalFoldASCII(upper, word string) bool {
	for i := 0; i < len(upper); i++ {
		c := word[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != upper[i] {
			return false
		}
	}
	return true
}

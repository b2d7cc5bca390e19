package protocol

import (
	"strconv"
	"strings"
)

// Command is one protocol line, read and validated. Which fields are set
// depends on the verb; the others are zero. Strings point into the line that
// was read, so reading a command does not allocate (ADD's list aside).
type Command struct {
	Verb      Verb
	Component string       // c: every verb but PAUSE, RESUME and a bare STATUS; BUDGET: c or build (or "" for @a)
	Dep       string       // BLOCKED, DEPEND, UNDEPEND: the dependency
	Other     string       // CONFLICT: the component collided with; OVERLAP: d
	Kind      ConflictKind // CONFLICT
	Percent   int          // PROGRESS, 0..100
	Branch    string       // PROGRESS: the ref its note names as the work in progress (branch=<ref>), checked by CheckRef
	PR        string       // READY: PR URL or branch
	Verdict   Verdict      // AUDIT, CI
	Agent     string       // ASSIGN: the sender id to assign to; BUDGET: the agent whose budget it is
	Amount    Amount       // BUDGET: the amount
	Deps      []string     // ADD: dependencies of the new component
	Text      string       // the free-text tail: note (after branch=), details, reason; OVERLAP: the files
}

// Verdict is an auditor's or the CI's answer.
type Verdict uint8

// Verdicts. Conflict is for CI only.
const (
	NoVerdict Verdict = iota
	Pass
	Fail
	MergeConflict
)

func (v Verdict) String() string {
	switch v {
	case Pass:
		return "PASS"
	case Fail:
		return "FAIL"
	case MergeConflict:
		return "CONFLICT"
	}
	return ""
}

// ConflictKind says what two components collide on.
type ConflictKind uint8

// Conflict kinds: files wait for the other builder; interfaces need a human.
const (
	NoKind ConflictKind = iota
	Files
	Interface
)

func (k ConflictKind) String() string {
	switch k {
	case Files:
		return "files"
	case Interface:
		return "interface"
	}
	return ""
}

// String formats the command as its canonical line. Reading the result gives
// the same command back.
func (c Command) String() string {
	var b strings.Builder
	b.WriteString(c.Verb.String())
	word := func(s string) {
		if s != "" {
			b.WriteByte(' ')
			b.WriteString(s)
		}
	}
	word(c.Component)
	switch c.Verb {
	case Progress:
		word(strconv.Itoa(c.Percent))
		if c.Branch != "" {
			word(BranchKey + c.Branch)
		}
	case Blocked, Depend, Undepend:
		word(c.Dep)
	case Overlap:
		word(c.Other)
	case Conflict:
		word(c.Other)
		word(c.Kind.String())
	case Ready:
		word(c.PR)
	case Audit, CI:
		word(c.Verdict.String())
	case Assign:
		word(c.Agent)
	case Budget:
		word(c.Agent)
		word(c.Amount.String())
	case Add:
		for _, d := range c.Deps {
			word(d)
		}
	}
	word(c.Text)
	return b.String()
}

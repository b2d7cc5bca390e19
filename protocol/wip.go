package protocol

import (
	"strconv"
	"strings"
)

// Work in progress, handoff and overlaps (contract section 10): the lines a
// host (the CI role bound to a git repository) and the builders say beside
// foreman's, written and read here so that foreman, the host, foreman mcp
// and the scripted builders agree on them.

// HandedBranch reads the branch an ACK's context hands over after a
// departure (contract section 10): its first word, branch=<ref>, written
// by foreman before anything a sender wrote (an ABORT's reason, an audit's
// findings), so that nothing echoed can pose as it. "" and false if the
// context names none, or names a ref that is not one.
func HandedBranch(context string) (string, bool) {
	first, _ := cutWord(strings.TrimSpace(context))
	if !hasBranchKey(first) {
		return "", false
	}
	ref := first[len(BranchKey):]
	if _, err := CheckRef(ref); err != nil {
		return "", false
	}
	return ref, true
}

// Handover is what an ACK's context says a departed builder left, read
// back (foreman writes it: branch=<ref> after TIMEOUT of @a: ...).
type Handover struct {
	Branch string // where its work is; "" if no ref was named
	Why    string // TIMEOUT, RETRY, ABORT, RELEASE or ASSIGN
	From   string // the builder who left
}

// ReadHandover reads an ACK's context after a departure: the branch it
// names first (HandedBranch), why the last builder left and who it was.
// False for a context that says no departure (a first ACK, or one after
// RESOLVE). A host reads it to know whose work, on which branch, the new
// builder is handed.
func ReadHandover(context string) (Handover, bool) {
	var h Handover
	context = strings.TrimSpace(context)
	if b, ok := HandedBranch(context); ok {
		h.Branch = b
		_, context = cutWord(context)
	} else if first, rest := cutWord(context); hasBranchKey(first) {
		context = rest // a ref foreman would not keep: no branch
	}
	sc := scanner{rest: context}
	if sc.word() != "after" {
		return Handover{}, false
	}
	h.Why = sc.word()
	switch h.Why {
	case "TIMEOUT", "RETRY", "RELEASE", "ASSIGN", "ABORT":
	default:
		return Handover{}, false
	}
	if w := sc.word(); w != "of" && w != "by" {
		return Handover{}, false
	}
	h.From = strings.TrimRight(sc.word(), ":")
	if !ValidAgent(h.From) {
		return Handover{}, false
	}
	return h, true
}

// OverlapLine is the host's line saying that c's and d's work in progress
// would conflict in files (c is the one whose ref moved last). Each path is
// made one safe word, and the list is cut to fit one line, saying how many
// were left out.
func OverlapLine(c, d string, files []string) string {
	var b strings.Builder
	b.WriteString(Overlap.String())
	b.WriteByte(' ')
	b.WriteString(CleanWord(c, MaxName))
	b.WriteByte(' ')
	b.WriteString(CleanWord(d, MaxName))
	budget := b.Len() + MaxText
	for i, f := range files {
		w := CleanWord(f, MaxName)
		more := " (+" + strconv.Itoa(len(files)-i) + " more)"
		if i > 0 && b.Len()+1+len(w)+len(" (+999999 more)") > budget {
			b.WriteString(more)
			break
		}
		b.WriteByte(' ')
		b.WriteString(w)
	}
	if len(files) == 0 {
		b.WriteString(" -")
	}
	return b.String()
}

// HandoffPrefix is where a host keeps the work departed builders left:
// refs/foreman/handoff/<c>/<n>, n counting c's departures from 1.
const HandoffPrefix = "refs/foreman/handoff/"

// HandoffRef is the ref a host pins c's n-th departed builder's work as;
// false when c's name cannot make one (a name git refuses, such as one
// holding .. or ending in .lock: component names allow those).
func HandoffRef(c string, n int) (string, bool) {
	if n < 1 || !ValidComponent(c) {
		return "", false
	}
	ref := HandoffPrefix + c + "/" + strconv.Itoa(n)
	if !validHandoff(ref) {
		return "", false
	}
	return ref, true
}

// validHandoff checks a handoff ref by git's rules, as a branch name is
// checked (CheckRef reads refs/heads/ names only).
func validHandoff(ref string) bool {
	_, err := CheckRef(strings.TrimPrefix(ref, "refs/"))
	return err == nil && len(ref) <= MaxRef
}

// Handoff is the host's word to a new builder that the work the last one
// pushed is kept for it (contract section 10): a chat line, not a
// protocol line, said once the new ACK is.
type Handoff struct {
	To        string // the new builder's sender id
	Component string
	N         int    // c's departures so far: the n of Ref
	Ref       string // refs/foreman/handoff/<c>/<n>
	Commit    string // the tip kept
	From      string // the builder who left it; "" if not known
	Branch    string // the ref it was pushed to; "" if not known
}

// HandoffLine writes h as the host says it:
//
//	@b c: refs/foreman/handoff/c/1 (<commit>) keeps the work @a pushed to b1/c; start from it (git fetch the host's repository, then git checkout -b <branch> <commit>)
//
// false when h is not one to say: a sender id, a component, a commit id
// and a handoff ref that are not what they must be.
func HandoffLine(h Handoff) (string, bool) {
	ref, ok := HandoffRef(h.Component, h.N)
	if !ok || !ValidAgent(h.To) || !IsCommitID(h.Commit) || h.Ref != "" && h.Ref != ref {
		return "", false
	}
	var b strings.Builder
	b.WriteString(h.To + " " + h.Component + ": " + ref + " (" + h.Commit + ") keeps the work ")
	if ValidAgent(h.From) {
		b.WriteString(h.From + " ")
	} else {
		b.WriteString("the last builder ")
	}
	b.WriteString("pushed")
	if _, err := CheckRef(h.Branch); err == nil {
		b.WriteString(" to " + h.Branch)
	}
	b.WriteString(" before it left; start from it: fetch " + ref + " from the host's repository and branch from " + h.Commit)
	return b.String(), true
}

// ReadHandoff reads a host's handoff line (HandoffLine's form): who it is
// for, the component, the ref and the commit; the departed builder and its
// branch when the line names them. False for any other line. Only the CI
// role says these: a reader should take them from its members alone.
func ReadHandoff(line string) (Handoff, bool) {
	sc := scanner{rest: strings.TrimSpace(line)}
	h := Handoff{To: sc.word()}
	c, ok := strings.CutSuffix(sc.word(), ":")
	if !ok || !ValidAgent(h.To) || !ValidComponent(c) {
		return Handoff{}, false
	}
	h.Component = c
	h.Ref = sc.word()
	n, ok := handoffN(h.Ref, c)
	if !ok {
		return Handoff{}, false
	}
	h.N = n
	commit, ok := strings.CutPrefix(sc.word(), "(")
	if commit, ok = strings.CutSuffix(commit, ")"); !ok || !IsCommitID(commit) {
		return Handoff{}, false
	}
	h.Commit = commit
	if sc.word() != "keeps" || sc.word() != "the" || sc.word() != "work" {
		return h, true
	}
	if w := sc.word(); ValidAgent(w) {
		h.From = w
	}
	for w := sc.word(); w != ""; w = sc.word() {
		if w == "to" {
			if ref := sc.word(); ref != "" {
				if _, err := CheckRef(ref); err == nil {
					h.Branch = ref
				}
			}
			break
		}
		if w == "before" {
			break
		}
	}
	return h, true
}

// handoffN reads n from refs/foreman/handoff/<c>/<n>.
func handoffN(ref, c string) (int, bool) {
	rest, ok := strings.CutPrefix(ref, HandoffPrefix+c+"/")
	if !ok || rest == "" || len(rest) > 9 || rest[0] == '0' {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 {
		return 0, false
	}
	if want, ok := HandoffRef(c, n); !ok || want != ref {
		return 0, false
	}
	return n, true
}

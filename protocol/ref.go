package protocol

import (
	"fmt"
	"strings"
)

// A ref is what a builder names as where its work is: READY's branch, and
// the branch= of a PROGRESS note (contract section 10). The rules are here,
// with no git, so that foreman, foreman host and the agents read a ref the
// same way; the host still asks git (check-ref-format) before it uses one.

// MaxRef is the longest ref accepted.
const MaxRef = 200

// Ref is a ref, checked: a branch (Branch is its full name, refs/heads/...)
// or a full commit id (Commit).
type Ref struct {
	Branch string
	Commit string
}

// String is the name as people read it: the branch without refs/heads/,
// or the commit id.
func (r Ref) String() string {
	if r.Branch != "" {
		return strings.TrimPrefix(r.Branch, "refs/heads/")
	}
	return r.Commit
}

// RefError is a name that is not a branch or commit id. Why says so in
// words a builder can act on, on one line.
type RefError struct{ Why string }

func (e *RefError) Error() string { return e.Why }

func badRef(format string, args ...any) error { return &RefError{Why: fmt.Sprintf(format, args...)} }

// ParseRef reads a ref: a branch name (with or without refs/heads/) or a
// full commit id. It refuses, saying why, what git could read as an
// option, a range or a revision expression, and anything a shell would
// treat specially: nobody needs those, and they are the shapes attacks
// take. Branch names that pass may still break git's own rules (a
// component starting with a dot, one ending in .lock): CheckRef refuses
// those too.
func ParseRef(ref string) (Ref, error) {
	commit, err := checkRef(ref, false)
	return refOf(ref, commit), err
}

// CheckRef is ParseRef and git's own rules for a branch name
// (git check-ref-format, for the characters ParseRef leaves): no empty
// component (a leading, trailing or double /), none starting with a dot or
// ending in .lock, and no dot at the end. It is how foreman checks a ref
// it keeps without asking git.
func CheckRef(ref string) (Ref, error) {
	commit, err := checkRef(ref, true)
	return refOf(ref, commit), err
}

// ValidRef reports whether CheckRef takes ref, without allocating: the
// engine checks every ref it keeps.
func ValidRef(ref string) bool {
	_, err := checkRef(ref, true)
	return err == nil
}

func refOf(ref string, commit bool) Ref {
	switch {
	case ref == "":
		return Ref{}
	case commit:
		return Ref{Commit: ref}
	case strings.HasPrefix(ref, "refs/heads/"):
		return Ref{Branch: ref}
	}
	return Ref{Branch: "refs/heads/" + ref}
}

// checkRef applies the rules, allocating only to say what is wrong; with
// git, git's own rules for a branch name too.
func checkRef(ref string, git bool) (commit bool, err error) {
	switch {
	case ref == "":
		return false, badRef("no branch named")
	case len(ref) > MaxRef:
		return false, badRef("ref is %d bytes long, more than %d", len(ref), MaxRef)
	case strings.HasPrefix(ref, "-"):
		return false, badRef("ref %s starts with -, which git would read as an option", QuoteRef(ref))
	case strings.Contains(ref, ".."):
		return false, badRef("ref %s holds .., a range, not a branch", QuoteRef(ref))
	}
	for i := 0; i < len(ref); i++ {
		if c := ref[i]; c >= 0x80 || !refChar(rune(c)) {
			return false, badChar(ref)
		}
	}
	if IsCommitID(ref) {
		return true, nil
	}
	name := ref
	if strings.HasPrefix(name, "refs/") {
		if !strings.HasPrefix(name, "refs/heads/") {
			return false, badRef("ref %s is not a branch (refs/heads/...) or a full commit id", QuoteRef(ref))
		}
		name = strings.TrimPrefix(name, "refs/heads/")
	}
	if name == "" {
		return false, badRef("no branch named")
	}
	if !git {
		return false, nil
	}
	if strings.HasSuffix(name, ".") {
		return false, badRef("ref %s ends with a dot, which git does not allow", QuoteRef(ref))
	}
	for rest := name; ; {
		part, tail, more := strings.Cut(rest, "/")
		switch {
		case part == "":
			return false, badRef("ref %s has an empty part (a leading, trailing or double /)", QuoteRef(ref))
		case strings.HasPrefix(part, "."):
			return false, badRef("ref %s has a part starting with a dot, which git does not allow", QuoteRef(ref))
		case strings.HasSuffix(part, ".lock"):
			return false, badRef("ref %s has a part ending in .lock, which git does not allow", QuoteRef(ref))
		}
		if !more {
			return false, nil
		}
		rest = tail
	}
}

// badChar says what is wrong with the first character of ref no branch
// name may hold.
func badChar(ref string) error {
	for _, r := range ref {
		switch {
		case r < 0x20 || r == 0x7f:
			return badRef("ref %s holds a control character", QuoteRef(ref))
		case r == ' ' || r == '\t':
			return badRef("ref %s holds a space", QuoteRef(ref))
		case r >= 0x80:
			return badRef("ref %s holds a character outside ASCII; name branches with letters, digits, . _ / + -", QuoteRef(ref))
		case !refChar(r):
			return badRef("ref %s holds %q, which no branch name here may hold (letters, digits, . _ / + - only)", QuoteRef(ref), r)
		}
	}
	return badRef("ref %s is not a branch name", QuoteRef(ref))
}

func refChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		r == '.' || r == '_' || r == '/' || r == '+' || r == '-'
}

// IsCommitID reports a full object id: 40 hex digits (SHA-1) or 64
// (SHA-256), lower case as git writes them.
func IsCommitID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// QuoteRef shows a name a builder wrote, bounded and without anything that
// could break a line: control characters are written as \xNN.
func QuoteRef(s string) string {
	const max = 60
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= max {
			b.WriteString("...")
			break
		}
		if r < 0x20 || r == 0x7f {
			fmt.Fprintf(&b, "\\x%02x", r)
			continue
		}
		if breaksLine(r) {
			r = '?'
		}
		b.WriteRune(r)
	}
	return b.String()
}

package gitrepo

import (
	"context"
	"fmt"
	"strings"
)

// Target is what a builder's READY named, checked: a branch (Branch is
// its full name, refs/heads/...) or a full commit id (Commit).
type Target struct {
	Branch string
	Commit string
}

// String is the name as people read it: the branch without refs/heads/,
// or the commit id.
func (t Target) String() string {
	if t.Branch != "" {
		return strings.TrimPrefix(t.Branch, "refs/heads/")
	}
	return t.Commit
}

// MaxRef is the longest name accepted.
const MaxRef = 200

// BadRef is a name that is not a branch or commit id this host accepts.
// Its text says why, in words a builder can act on.
type BadRef struct{ Why string }

func (e *BadRef) Error() string { return e.Why }

func badRef(format string, args ...any) error { return &BadRef{Why: fmt.Sprintf(format, args...)} }

// ParseRef reads a builder's ref without asking git: a branch name (with or
// without refs/heads/) or a full commit id. It refuses, saying why, what
// git could read as an option, a range or a revision expression, and
// anything a shell would treat specially: the host never needs those, and
// they are the shapes attacks take. Names that pass still go through git
// check-ref-format (CheckRef).
func ParseRef(ref string) (Target, error) {
	switch {
	case ref == "":
		return Target{}, badRef("no branch named")
	case len(ref) > MaxRef:
		return Target{}, badRef("ref is %d bytes long, more than %d", len(ref), MaxRef)
	case strings.HasPrefix(ref, "-"):
		return Target{}, badRef("ref %s starts with -, which git would read as an option", quote(ref))
	case strings.Contains(ref, ".."):
		return Target{}, badRef("ref %s holds .., a range, not a branch", quote(ref))
	}
	for _, r := range ref {
		switch {
		case r < 0x20 || r == 0x7f:
			return Target{}, badRef("ref %s holds a control character", quote(ref))
		case r == ' ' || r == '\t':
			return Target{}, badRef("ref %s holds a space", quote(ref))
		case r >= 0x80:
			return Target{}, badRef("ref %s holds a character outside ASCII; name branches with letters, digits, . _ / + -", quote(ref))
		case !refChar(r):
			return Target{}, badRef("ref %s holds %q, which no branch name here may hold (letters, digits, . _ / + - only)", quote(ref), r)
		}
	}
	if isCommitID(ref) {
		return Target{Commit: ref}, nil
	}
	name := ref
	if strings.HasPrefix(name, "refs/") {
		if !strings.HasPrefix(name, "refs/heads/") {
			return Target{}, badRef("ref %s is not a branch (refs/heads/...) or a full commit id", quote(ref))
		}
		name = strings.TrimPrefix(name, "refs/heads/")
	}
	if name == "" {
		return Target{}, badRef("no branch named")
	}
	return Target{Branch: "refs/heads/" + name}, nil
}

func refChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		r == '.' || r == '_' || r == '/' || r == '+' || r == '-'
}

// isCommitID reports a full object id: 40 hex digits (SHA-1) or 64
// (SHA-256), lower case as git writes them.
func isCommitID(s string) bool {
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

// quote shows a name a builder wrote, bounded and without anything that
// could break a line.
func quote(s string) string {
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
		b.WriteRune(r)
	}
	return b.String()
}

// CheckRef asks git whether a branch name is well formed (git
// check-ref-format): no component starting with a dot or ending in .lock,
// no //, no trailing / or dot, and the rest of git's rules.
func (r *Repo) CheckRef(ctx context.Context, t Target) error {
	if t.Branch == "" {
		return nil
	}
	// The name starts with refs/heads/, so it cannot be read as an option.
	if _, err := r.git(ctx, "check-ref-format", t.Branch); err != nil {
		if exitCode(err) == 1 {
			return badRef("%s is not a valid branch name (git check-ref-format)", quote(t.String()))
		}
		return err
	}
	return nil
}

// Resolve finds the commit t names now; "" if there is no such branch or
// commit.
func (r *Repo) Resolve(ctx context.Context, t Target) (string, error) {
	name := t.Branch
	if name == "" {
		name = t.Commit
	}
	return r.RevParse(ctx, name)
}

// RevParse resolves a full ref name or an object id to a commit id; "" if
// it names no commit.
func (r *Repo) RevParse(ctx context.Context, name string) (string, error) {
	out, err := r.git(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", name+"^{commit}")
	if err != nil {
		if exitCode(err) == 1 {
			return "", nil
		}
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// Missing says what a builder named does not exist, in words it can act
// on.
func Missing(t Target) string {
	if t.Branch != "" {
		return fmt.Sprintf("no branch %s in the host's repository; push it, then say READY again", quote(t.String()))
	}
	return fmt.Sprintf("no commit %s in the host's repository; push it, then say READY again", t.Commit)
}

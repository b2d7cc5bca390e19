package gitrepo

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentforeman/foreman/protocol"
)

// Target is what a builder's READY named, checked: protocol's Ref, a
// branch (Branch is its full name, refs/heads/...) or a full commit id.
type Target = protocol.Ref

// MaxRef is the longest name accepted.
const MaxRef = protocol.MaxRef

// BadRef is a name that is not a branch or commit id this host accepts.
// Its text says why, in words a builder can act on.
type BadRef struct{ Why string }

func (e *BadRef) Error() string { return e.Why }

func badRef(format string, args ...any) error { return &BadRef{Why: fmt.Sprintf(format, args...)} }

// ParseRef reads a builder's ref without asking git: a branch name (with or
// without refs/heads/) or a full commit id. The rules are protocol's
// (protocol.ParseRef), which foreman applies to the refs it keeps, so the
// host and foreman refuse the same names: what git could read as an
// option, a range or a revision expression, and anything a shell would
// treat specially. Names that pass still go through git check-ref-format
// (CheckRef).
func ParseRef(ref string) (Target, error) {
	r, err := protocol.ParseRef(ref)
	if err != nil {
		return Target{}, &BadRef{Why: err.Error()}
	}
	return r, nil
}

// quote shows a name a builder wrote, bounded and without anything that
// could break a line.
func quote(s string) string { return protocol.QuoteRef(s) }

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

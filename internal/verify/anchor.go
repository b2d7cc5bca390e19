package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host/receipt"
)

// Rollback and freeze. A target forced back, its notes with it, still
// verifies commit by commit: every receipt left holds. What tells is the
// newest landing, anchored by something a rollback cannot take back:
//
//   - the state file (Options.State), where verify keeps the newest
//     landing it accepted, as a TUF client keeps the last timestamp it
//     saw: a target whose chain is shorter, or holds another landing at
//     that place, was rolled back, and the landings lost are named;
//   - the host's signed head (receipt.HeadRef), signed again at least
//     hourly: a head naming a landing the target does not hold says it was
//     rolled back; one older than Options.MaxAge anchors nothing (the host
//     is stopped, or an old head was put back to freeze the target), and
//     one older than the state file's was put back.
//
// With neither, rollback is not checked: the report says so, and is not
// OK unless the caller accepts that (Options.Unanchored).

// maxKept is how many of the newest landings the state file names, to
// name those a rollback lost.
const maxKept = 1000

// state is the state file: the newest landing verify accepted for a
// repository's target.
type state struct {
	Repository string         `json:"repository"`
	Target     string         `json:"target"`
	Newest     receipt.Link   `json:"newest"`
	HeadAt     time.Time      `json:"head_at,omitzero"` // the newest signed head seen: an older one is refused
	VerifiedAt time.Time      `json:"verified_at"`
	Landings   []stateLanding `json:"landings"` // the newest landings, oldest first, at most maxKept
}

type stateLanding struct {
	Seq       int    `json:"seq"`
	Commit    string `json:"commit"`
	Component string `json:"component"`
}

// readState reads the state file; nil when there is none yet (nothing was
// verified with it), an error when it cannot be used.
func readState(o Options) (*state, error) {
	if o.State == "" {
		return nil, nil
	}
	data, err := os.ReadFile(o.State)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	bad := func(why string) error {
		return fmt.Errorf("--state %s: %s; restore it from a copy, or delete it to start again (rollback is then checked against the host's signed head alone, and the next verify that holds writes it anew)", o.State, why)
	}
	if err != nil {
		return nil, bad(err.Error())
	}
	var st state
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, bad("not a state file of foreman verify (" + err.Error() + ")")
	}
	switch {
	case st.Newest.Seq < 1 || st.Newest.Commit == "" || st.Newest.Digest == "":
		return nil, bad("it names no landing")
	case st.Repository != o.Repository || st.Target != o.Target:
		return nil, fmt.Errorf("--state %s: it keeps repository %s, branch %s, and this is %s, branch %s; give each its own state file", o.State, st.Repository, st.Target, o.Repository, o.Target)
	}
	return &st, nil
}

// chainOn is the landings of the chain on the target's first-parent line,
// by their place in it: those whose receipts hold, of the repository
// expected.
func chainOn(o Options, line []gitrepo.Commit, rcs map[string]*opened) map[int]receipt.Link {
	out := map[int]receipt.Link{}
	for _, c := range line {
		if x := rcs[c.ID]; x.chained(o) {
			ch := x.st.Predicate.Chain
			if _, dup := out[ch.Seq]; !dup {
				out[ch.Seq] = receipt.Link{Seq: ch.Seq, Digest: x.digest, Commit: c.ID}
			}
		}
	}
	return out
}

// anchor checks the newest landing of the chain on the target against the
// signed head and the state file, and says in rep what anchored it, or why
// the target is refused as rolled back, or that nothing anchored it.
func anchor(ctx context.Context, o Options, rep *Report, line []gitrepo.Commit, rcs map[string]*opened, st *state) error {
	on := chainOn(o, line, rcs)
	for seq, l := range on {
		if seq > rep.Newest.Seq {
			rep.Newest = l
		}
	}
	holds := func(l receipt.Link) bool {
		got, ok := on[l.Seq]
		return ok && got.Digest == l.Digest && got.Commit == l.Commit
	}
	var why []string // what anchors nothing
	head, err := readHead(ctx, o)
	switch {
	case err != nil:
		rep.Rollback = err.Error()
		return nil
	case head == nil:
		why = append(why, fmt.Sprintf("no signed head of the host's at %s", receipt.HeadRef(o.Target)))
	case !holds(head.Newest):
		rep.Rollback = fmt.Sprintf("%s was rolled back: the host's head, signed %s, names landing %d (%s), which %s does not hold; %s",
			o.Target, stamp(head.At), head.Newest.Seq, short(head.Newest.Commit), o.Target, lost(rep.Newest, head.Newest.Seq, st))
		return nil
	case head.At.After(o.Now.Add(time.Hour)):
		rep.Rollback = fmt.Sprintf("the host's head is signed %s, more than an hour after now (%s): a clock is wrong, or it was made to outlast --max-age", stamp(head.At), stamp(o.Now))
		return nil
	case o.Now.Sub(head.At) > o.MaxAge:
		why = append(why, fmt.Sprintf("the host's signed head is older than --max-age %s (signed %s): the host has not signed since, or an old head was put back to freeze %s", o.MaxAge, stamp(head.At), o.Target))
	default:
		rep.Anchors = append(rep.Anchors, fmt.Sprintf("the host's head, signed %s, names landing %d", stamp(head.At), head.Newest.Seq))
	}
	switch {
	case st == nil && o.State == "":
		why = append(why, "no --state")
	case st == nil:
		why = append(why, "--state "+o.State+" is new")
	case !holds(st.Newest):
		rep.Rollback = fmt.Sprintf("%s was rolled back below landing %d (%s), which verify accepted on %s; %s",
			o.Target, st.Newest.Seq, short(st.Newest.Commit), stamp(st.VerifiedAt), lost(rep.Newest, st.Newest.Seq, st))
		return nil
	case head != nil && head.At.Before(st.HeadAt):
		rep.Rollback = fmt.Sprintf("the host's head at %s, signed %s, is older than the one verify saw before (signed %s): an old head was put back, to freeze %s",
			receipt.HeadRef(o.Target), stamp(head.At), stamp(st.HeadAt), o.Target)
		return nil
	default:
		rep.Anchors = append(rep.Anchors, fmt.Sprintf("the state file, where landing %d was accepted on %s", st.Newest.Seq, stamp(st.VerifiedAt)))
	}
	if len(rep.Anchors) == 0 {
		rep.Unanchored = "rollback not checked: " + strings.Join(why, "; ")
		rep.UnanchoredOK = o.Unanchored
	}
	return nil
}

// readHead reads and opens the host's signed head; nil when there is none.
// One that does not hold, or is another repository's or branch's, is an
// error: it is said, never taken as none.
func readHead(ctx context.Context, o Options) (*receipt.Head, error) {
	ref := receipt.HeadRef(o.Target)
	refs, err := o.Repo.Refs(ctx, ref)
	if err != nil {
		return nil, err
	}
	blob := refs[ref]
	if blob == "" {
		return nil, nil
	}
	x, cached := openedHead{}, false
	if o.Cache != nil {
		x, cached = o.Cache.heads[blob]
	}
	if !cached {
		data, err := o.Repo.Blobs(ctx, []string{blob})
		if err != nil {
			return nil, err
		}
		x.h, _, x.err = receipt.OpenHead(data[blob], o.Trusted)
		if o.Cache != nil {
			o.Cache.heads[blob] = x
		}
	}
	h, err := x.h, x.err
	switch {
	case err != nil:
		return nil, fmt.Errorf("the host's signed head at %s does not hold: %v", ref, err)
	case h.Repository != o.Repository:
		return nil, fmt.Errorf("the host's signed head at %s is for repository %s, not %s", ref, h.Repository, o.Repository)
	case h.Target != "refs/heads/"+o.Target:
		return nil, fmt.Errorf("the host's signed head at %s is for %s, not refs/heads/%s", ref, h.Target, o.Target)
	}
	return &h, nil
}

// lost names the landings a rollback took: those after have, up to seq,
// by component where the state file knows them.
func lost(have receipt.Link, seq int, st *state) string {
	if seq <= have.Seq {
		return fmt.Sprintf("it holds another landing %d (or none) where the chain had one: the landings from there on were rewritten", seq)
	}
	var named []string
	if st != nil {
		for _, l := range st.Landings {
			if l.Seq > have.Seq && l.Seq <= seq {
				named = append(named, fmt.Sprintf("%d %s (%s)", l.Seq, l.Component, short(l.Commit)))
			}
		}
	}
	what := fmt.Sprintf("landings %d to %d are lost", have.Seq+1, seq)
	if have.Seq+1 == seq {
		what = fmt.Sprintf("landing %d is lost", seq)
	}
	if len(named) > 0 {
		what += ": " + strings.Join(named, ", ")
	}
	return what + fmt.Sprintf(" (its newest landing is %d, %s)", have.Seq, short(have.Commit))
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// writeState keeps rep's newest landing, after a verify that holds.
func writeState(ctx context.Context, o Options, rep Report, line []gitrepo.Commit, rcs map[string]*opened, old *state) error {
	st := state{Repository: o.Repository, Target: o.Target, Newest: rep.Newest, VerifiedAt: o.Now}
	if old != nil {
		st.HeadAt = old.HeadAt
	}
	if head, err := readHead(ctx, o); err == nil && head != nil && head.At.After(st.HeadAt) {
		st.HeadAt = head.At
	}
	for _, c := range line {
		if x := rcs[c.ID]; x.chained(o) {
			p := x.st.Predicate
			st.Landings = append(st.Landings, stateLanding{Seq: p.Chain.Seq, Commit: c.ID, Component: p.Component})
		}
	}
	if n := len(st.Landings); n > maxKept {
		st.Landings = st.Landings[n-maxKept:]
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(o.State), ".verify-state-*")
	if err != nil {
		return fmt.Errorf("--state %s: %w", o.State, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("--state %s: %w", o.State, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("--state %s: %w", o.State, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("--state %s: %w", o.State, err)
	}
	if err := os.Rename(tmp.Name(), o.State); err != nil {
		return fmt.Errorf("--state %s: %w", o.State, err)
	}
	return nil
}

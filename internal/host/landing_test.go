package host

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/host/receipt"
)

// A pass made before review, on a target a car has landed on since, is not
// landed as it is: the component becomes a car on the new chain. (Landed
// from the old pass, its merge is not made on the target as it is: the
// landing would find "the target moved" where nobody moved it.)
func TestAnOldPassBecomesACarOnTheNewChain(t *testing.T) {
	s := trainHarness(t, 2)
	s.checked("b", "T") // b's check before review, on T
	land := s.landing(s.approve("a", "T"))
	a := s.finish(land.Run, Outcome{Result: Landed, Commit: "m-a"})
	require.Contains(t, a.Say, "MERGED a")
	car := s.started(s.approved("b"))
	assert.Equal(t, Car, car.Kind, "checked on the chain it lands on")
	assert.Equal(t, "m-a", car.Base)
	assert.Equal(t, "m-a", car.Target)
	assert.Empty(t, car.Ahead)
	a = s.finish(car.Run, Outcome{Result: Passed, Commit: "m-ab", Tip: "t-b", Base: "m-a"})
	land = s.started(a)
	assert.Equal(t, Land, land.Kind)
	assert.Equal(t, "m-a", land.Base)
	assert.Equal(t, "m-ab", land.Commit)
	for _, l := range a.Say {
		assert.NotContains(t, l, "moved outside the queue")
	}
}

// The landing says, as the car's check did, that a check was flaky.
func TestTheLandingLineKeepsTheCarsFlakyNote(t *testing.T) {
	s := trainHarness(t, 2)
	s.landed()
	car := s.started(s.approve("a", "old"))
	land := s.started(s.finish(car.Run, Outcome{Result: Passed, Commit: "m-a", Tip: "t-a", Base: "T2", Flaky: []string{"make test"}}))
	a := s.finish(land.Run, Outcome{Result: Landed, Commit: "m-a"})
	assert.Equal(t, "queue: a landed on main at m-a; receipt: git notes --ref foreman show m-a (flaky: make test failed, then passed on the same tree)", a.Say[0])
}

// A landing's receipt is recorded before the landing starts, and says
// what was approved, by whom, and which run passed on the tree it lands.
func TestTheReceiptIsRecordedBeforeTheLanding(t *testing.T) {
	s := trainHarness(t, 2)
	s.checked("a", "T")
	s.foreman("REVIEW a @ba b/a")
	s.hear("@aud", "AUDIT a PASS")
	a := s.foreman("STATUS a review owner=@ba pr=b/a audits=1/3 approved=yes approved_by=@aud")
	for _, r := range a.Records {
		if r.Op == OpApproved {
			assert.Equal(t, Approval{Component: "a", Owner: "@ba", Ref: "b/a",
				Approval: receipt.Approval{Tip: "t-a", Auditors: []string{"@aud"}, Round: 2}}, *r.Approval)
		}
	}
	require.Len(t, a.Start, 1)
	car := a.Start[0]
	assert.Equal(t, []string{"@aud"}, car.Auditors, "its commit's message names them")
	a = s.finish(car.Run, Outcome{Result: Passed, Reused: true, Commit: "m-a", Tip: "t-a", Base: "T", Tree: "tr-a"})
	var land Job
	for _, j := range a.Start {
		if j.Kind == Land {
			land = j
		}
	}
	require.Equal(t, Land, land.Kind)
	var rec *Record
	for i, r := range a.Records {
		if r.Op == OpReceipt {
			rec = &a.Records[i]
		}
	}
	require.NotNil(t, rec, "the receipt is in the records the landing starts with")
	assert.JSONEq(t, string(rec.Receipt), string(land.Receipt))
	key, err := receipt.KeyOf(testKey.PublicPEM())
	require.NoError(t, err)
	st, signer, err := receipt.Open(land.Receipt, []receipt.Key{key})
	require.NoError(t, err)
	assert.Equal(t, testKey.AgentID(), signer)
	assert.Equal(t, "m-a", st.Commit())
	assert.Equal(t, "tr-a", st.Tree())
	p := st.Predicate
	assert.Equal(t, "a", p.Component)
	assert.Equal(t, "@ba", p.Builder)
	assert.Equal(t, receipt.Approval{Tip: "t-a", Auditors: []string{"@aud"}, Round: 2}, p.Approved)
	assert.Equal(t, "T", p.LandedOn)
	assert.Equal(t, "refs/heads/main", p.Target)
	assert.Equal(t, "tr-a", p.Checks.Tree)
	assert.Equal(t, "check", p.Checks.Kind, "the check before review: nothing checked again")
	assert.Equal(t, "@host", p.Host)
	assert.Equal(t, receipt.LandedAsMerge, p.LandedAs)
}

// With CI gating on, what was approved is what passed before review; a
// host with no record of that (a new ledger) refuses to guess from the
// branch: it steps the component back to be checked and reviewed again.
func TestNoRecordOfWhatWasApprovedLandsNothing(t *testing.T) {
	s := trainHarness(t, 2)
	s.built("a", "@ba")
	s.foreman("REVIEW a @ba b/a")
	a := s.foreman("STATUS a review owner=@ba pr=b/a approved=yes")
	assert.Empty(t, a.Start)
	assert.Equal(t, []string{"CI a FAIL the host has no record of the commit of b/a that passed its check before review; say READY again to have it checked and reviewed"}, a.Say)
}

// Without CI gating the approved commit is the branch's when the host
// takes the approval up: the first car finds it, and it is recorded
// before anything lands; a restart lands that commit, not the branch's.
func TestWithoutGatingTheFirstCarFixesTheApprovedCommit(t *testing.T) {
	s := newHarness(t, func(c *Config) { c.Gating = false; c.Components = []string{"a"} })
	s.h.Target(s.now, "T")
	s.built("a", "@ba")
	s.foreman("REVIEW a @ba b/a")
	car := s.started(s.foreman("STATUS a review owner=@ba pr=b/a approved=yes approved_by=@aud"))
	assert.Empty(t, car.Tip, "not known yet")
	a := s.finish(car.Run, Outcome{Result: Passed, Commit: "m-a", Tip: "t-a", Base: "T"})
	var approved *Approval
	for _, r := range a.Records {
		if r.Op == OpApproved {
			approved = r.Approval
		}
	}
	require.NotNil(t, approved)
	assert.Equal(t, "t-a", approved.Tip)
	assert.Equal(t, Land, s.started(a).Kind)

	// A restart before the landing: the recorded approval, not the branch.
	var rp Replay
	for _, r := range a.Records {
		rp.Apply(r)
	}
	h := New(s.h.cfg, rp.State())
	h.Target(s.now, "T")
	a = h.Heard(s.now, "@foreman", true, "STATUS a review owner=@ba pr=b/a approved=yes")
	require.Len(t, queued(a), 1)
	assert.Equal(t, "t-a", queued(a)[0].Tip)
}

// A landing's receipt a crash cut off from its note, or from its record,
// is written at the next start, if its commit is on the target; if not,
// that landing was never made.
func TestReceiptsAreSettledAtStart(t *testing.T) {
	env := json.RawMessage(`{"payloadType":"x"}`)
	st := State{LastRun: 9, Receipts: []Receipt{
		{Component: "a", Commit: "m-a", Base: "T", Tip: "t-a", Envelope: env, Landed: true},
		{Component: "b", Commit: "m-b", Base: "m-a", Tip: "t-b", Envelope: env},
	}}
	s := newHarness(t, nil)
	h := New(s.h.cfg, st)
	a := h.Pending()
	assert.Empty(t, a.Start, "jobs start once the host runs")
	a = h.Tick(s.now)
	require.Len(t, a.Start, 2)
	for _, j := range a.Start {
		assert.Equal(t, Note, j.Kind)
		assert.Equal(t, []byte(env), j.Receipt)
	}
	a = h.Finished(s.now, Outcome{Run: a.Start[0].Run, Result: Landed, Commit: "m-a", Noted: true})
	assert.Contains(t, a.Records, Record{Op: OpNoted, Commit: "m-a"})
	a = h.Finished(s.now, Outcome{Run: 11, Result: Landed, Commit: "m-b", Noted: true})
	assert.Contains(t, a.Records, Record{Op: OpLanded, Component: "b", Commit: "m-b", Base: "m-a", Tip: "t-b"}, "landed, and the ledger never heard")
	assert.Contains(t, a.Records, Record{Op: OpNoted, Commit: "m-b"})
	var rp Replay
	for _, r := range Compacted(st) {
		rp.Apply(r)
	}
	assert.Equal(t, st.Receipts, rp.State().Receipts, "compaction keeps what is not settled")
}

// An approved commit lands once: a car that finds it on the target says
// MERGED, and a landing under way for it is never doubled by another job.
func TestAnApprovedCommitLandsOnce(t *testing.T) {
	s := trainHarness(t, 2)
	land := s.landing(s.approve("a", "T"))
	// Someone's view re-approves a while it lands: no second car.
	a := s.foreman("STATUS a review owner=@ba pr=b/a approved=yes")
	assert.Empty(t, queued(a))
	a = s.finish(land.Run, Outcome{Result: Landed, Commit: "m-a"})
	assert.Equal(t, 1, count(a.Say, "MERGED a"))
	a = s.foreman("STATUS a review owner=@ba pr=b/a approved=yes")
	assert.Empty(t, queued(a), "merged: the host's view is newer")
}

func count(lines []string, want string) int {
	n := 0
	for _, l := range lines {
		if l == want {
			n++
		}
	}
	return n
}

// A host that stops right after a landing (SIGTERM: the landing recorded,
// MERGED never said) hands over to a leader that knows only its records.
// The builder pushed after the approval meanwhile. The next leader's car
// carries the approved commit, finds it on the target and says MERGED: it
// does not check and land what the branch holds now, which nobody
// reviewed. (Before the approval was recorded, the pass was all there was,
// and a landing deletes it: the car went out with no commit and took the
// branch's.)
func TestAHandOverAfterALandingLandsNothingUnreviewed(t *testing.T) {
	s := trainHarness(t, 2)
	land := s.landing(s.approve("a", "T"))
	a := s.finish(land.Run, Outcome{Result: Landed, Commit: "m-a"})
	require.Contains(t, a.Say, "MERGED a") // said to a room the stopping host has left: nobody heard it

	next := s.restarted("m-a")
	next.h.Joined(next.now)
	car := next.started(next.foreman("STATUS a review owner=@ba pr=b/a approved=yes"))
	assert.Equal(t, Car, car.Kind)
	assert.Equal(t, "t-a", car.Tip, "the approved commit, never the branch as it is now")
	a = next.finish(car.Run, Outcome{Result: Landed, Already: true, Commit: "m-a", Base: "m-a", Tip: "t-a"})
	assert.Equal(t, []string{"queue: a was already on main at m-a; receipt: git notes --ref foreman show m-a", "MERGED a"}, a.Say)
	assert.Empty(t, queued(a), "nothing more to land")
}

// Foreman's word that c is approved, said again without who approved it
// or which round (an older view, a STATUS after a restart), keeps what
// the record holds: the receipt names the auditors. And the same
// approval is recorded once.
func TestAnApprovalSaidAgainKeepsWhoApproved(t *testing.T) {
	s := trainHarness(t, 2)
	s.checked("a", "T")
	s.foreman("REVIEW a @ba b/a")
	a := s.foreman("STATUS a review owner=@ba pr=b/a audits=1/3 approved=yes approved_by=@aud")
	car, ok := startedOf(a, Car)
	require.True(t, ok)
	a = s.foreman("STATUS a review owner=@ba pr=b/a approved=yes")
	for _, r := range a.Records {
		assert.NotEqual(t, OpApproved, r.Op, "the same approval, recorded once")
	}
	assert.Equal(t, Approval{Component: "a", Owner: "@ba", Ref: "b/a",
		Approval: receipt.Approval{Tip: "t-a", Auditors: []string{"@aud"}, Round: 2}}, s.h.approvals["a"])
	land, ok := startedOf(s.finish(car.Run, Outcome{Result: Passed, Reused: true, Commit: "m-a", Tip: "t-a", Base: "T", Tree: "tr-a"}), Land)
	require.True(t, ok)
	p := openReceipt(t, land.Receipt)
	assert.Equal(t, []string{"@aud"}, p.Approved.Auditors)
	assert.Equal(t, 2, p.Approved.Round)
}

// The round of review is one more than the audits foreman counts failed:
// none failed, the first round; a count that makes no sense, none said.
func TestTheRoundOfReview(t *testing.T) {
	for audits, want := range map[string]int{"0/3": 1, "2/3": 3, "-1/3": 0, "x/3": 0, "": 0} {
		s := trainHarness(t, 2)
		s.checked("a", "T")
		s.foreman("REVIEW a @ba b/a")
		line := "STATUS a review owner=@ba pr=b/a approved=yes"
		if audits != "" {
			line += " audits=" + audits
		}
		s.foreman(line)
		assert.Equal(t, want, s.h.approvals["a"].Round, "audits=%s", audits)
	}
}

// What passed is recorded as the shell reported it: each try's log, where
// it ran; a report without them records none (never null).
func TestWhatPassedIsRecordedAsReported(t *testing.T) {
	s := trainHarness(t, 2)
	s.built("a", "@ba")
	j := s.started(s.hear("@ba", "READY a b/a"))
	ev := &receipt.Checks{Commands: []receipt.Command{}, Tries: []receipt.Log{{Name: "a-1.log", Digest: receipt.Digest([]byte("ok"))}},
		RanOn: []string{"worker w1"}, Sandbox: "sha256:x"}
	s.finish(j.Run, Outcome{Result: Passed, Commit: "m-a", Tip: "t-a", Base: "T", Tree: "tr-a", Checks: ev})
	got, ok := s.h.trees.get("tr-a")
	require.True(t, ok)
	assert.Equal(t, ev.Tries, got.Tries)
	assert.Equal(t, []string{"worker w1"}, got.RanOn)

	s.built("b", "@bb")
	j = s.started(s.hear("@bb", "READY b b/b"))
	s.finish(j.Run, Outcome{Result: Passed, Commit: "m-b", Tip: "t-b", Base: "T", Tree: "tr-b", Checks: &receipt.Checks{Commands: []receipt.Command{}}})
	got, ok = s.h.trees.get("tr-b")
	require.True(t, ok)
	assert.NotNil(t, got.Tries)
	assert.NotNil(t, got.RanOn)
	assert.NotNil(t, got.Commands)
}

// A batch whose landing finds a branch below its head moved steps back
// that component, the one the job names, not the head's.
func TestABatchStepsBackTheComponentWhoseBranchMoved(t *testing.T) {
	s := batchHarness(t, 1, 6, 0)
	for _, c := range []string{"a", "b", "c", "d", "e", "f"} {
		s.checked(c, "old")
	}
	_, land, whole := s.aThenFive()
	s.finish(land.Run, Outcome{Result: Landed, Commit: land.Commit})
	batch := s.started(s.finish(whole.Run, chainOut(Passed, "a", "b", "c", "d", "e", "f")))
	require.Len(t, batch.Batch, 4)
	a := s.finish(batch.Run, Outcome{Result: Stale, Culprit: "c", Found: "0123456789abcdef"})
	assert.Contains(t, a.Say, "CI c FAIL branch b/c moved to 0123456789ab after t-c was approved; say READY again to have it checked and reviewed")
	for _, l := range a.Say {
		assert.NotContains(t, l, "CI f FAIL", "the head's branch did not move")
	}
}

// A note job tried again after the repository was locked is still due
// when another note job ends first: every receipt gets its note.
func TestANoteTriedAgainIsNotDropped(t *testing.T) {
	env := json.RawMessage(`{"payloadType":"x"}`)
	st := State{LastRun: 9, Receipts: []Receipt{
		{Component: "a", Commit: "m-a", Base: "T", Tip: "t-a", Envelope: env, Landed: true},
		{Component: "b", Commit: "m-b", Base: "m-a", Tip: "t-b", Envelope: env, Landed: true},
	}}
	s := newHarness(t, nil)
	h := New(s.h.cfg, st)
	h.Pending()
	a := h.Tick(s.now)
	require.Len(t, a.Start, 2)
	h.Finished(s.now, Outcome{Run: a.Start[0].Run, Result: Retry, Line: "the notes ref is locked"})
	h.Finished(s.now, Outcome{Run: a.Start[1].Run, Result: Landed, Commit: "m-b", Noted: true})
	a = h.Tick(s.now.Add(time.Hour))
	require.Len(t, a.Start, 1, "a's note, tried again")
	assert.Equal(t, Note, a.Start[0].Kind)
	assert.Equal(t, "m-a", a.Start[0].Commit)
}

// A landing that ends after its component left approval and came back
// with a new READY does not take that READY's check with it: the check's
// verdict is said.
func TestALandingEndingDoesNotDropAnotherRunOfItsComponent(t *testing.T) {
	s := trainHarness(t, 2)
	land := s.signedLanding(s.approve("a", "T"))
	s.foreman("OK RELEASE a")
	s.foreman("ACK a @ba")
	check := s.started(s.hear("@ba", "READY a b/a"))
	require.Equal(t, Check, check.Kind)
	s.finish(land.Run, Outcome{Result: Landed, Commit: land.Commit})
	a := s.finish(check.Run, Outcome{Result: Passed, Commit: "m-a2", Tip: "t-a2", Base: "m-a", Tree: "tr-a2"})
	assert.Contains(t, a.Say, "CI a PASS m-a2", "the check's verdict, not dropped as stale")
}

// Each landing of a batch says its own: the head's branch pruned is the
// head's, a member's is the member's (PrunedOf).
func TestABatchSaysWhichBranchesWerePruned(t *testing.T) {
	s := batchHarness(t, 1, 6, 0)
	s.h.cfg.Prune = true
	for _, c := range []string{"a", "b", "c", "d", "e", "f"} {
		s.checked(c, "old")
	}
	_, land, whole := s.aThenFive()
	s.finish(land.Run, Outcome{Result: Landed, Commit: land.Commit})
	batch := s.started(s.finish(whole.Run, chainOut(Passed, "a", "b", "c", "d", "e", "f")))
	require.Len(t, batch.Batch, 4)
	a := s.finish(batch.Run, Outcome{Result: Landed, Commit: batch.Commit, Pruned: true, PrunedOf: []string{"c"}})
	said := strings.Join(a.Say, "\n")
	for _, c := range []string{"b", "c", "d", "e", "f"} {
		line := ""
		for _, l := range a.Say {
			if strings.HasPrefix(l, "queue: "+c+" landed") {
				line = l
			}
		}
		require.NotEmpty(t, line, said)
		if c == "f" || c == "c" {
			assert.Contains(t, line, "branch b/"+c+" deleted (host.prune)")
		} else {
			assert.NotContains(t, line, "deleted", line)
		}
	}
}

// What landed is kept in memory as the records keep it: the same life
// will not land an approved commit twice.
func TestALandedApprovalIsKnownLanded(t *testing.T) {
	s := trainHarness(t, 2)
	land := s.signedLanding(s.approve("a", "T"))
	s.finish(land.Run, Outcome{Result: Landed, Commit: land.Commit})
	k := &car{c: s.h.get("a"), tip: "t-a"}
	assert.Contains(t, s.h.mayLand(k), "t-a landed before, at m-a")
}

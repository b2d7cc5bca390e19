package sim

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

const me = "@me"

func steady() Builder {
	return Builder{React: 30 * time.Second, Step: 3 * time.Minute, Steps: 4, FixSteps: 2}
}

// claimed hears TASKS, lets the builder claim, and acknowledges it.
func claimed(w *fakeWorld, b *builder, c string) {
	w.hear(b, "TASKS "+c)
	w.advance(time.Minute)
	assert.Equal(w.t, []string{"CLAIM " + c}, w.take())
	w.hear(b, "ACK "+c+" "+me)
}

func TestBuilderClaimsWorksAndReports(t *testing.T) {
	w, b := newWorld(t, me), newBuilder("ada", steady())
	w.hear(b, "TASKS db auth")
	assert.Empty(t, w.take(), "it thinks before it claims")
	w.advance(time.Minute)
	assert.Equal(t, []string{"CLAIM db"}, w.take())
	w.hear(b, "ACK db "+me)
	w.advance(12*time.Minute + 2*time.Minute)
	assert.Equal(t, []string{"PROGRESS db 25", "PROGRESS db 50", "PROGRESS db 75", "READY db ada/db"}, w.take())
	w.advance(time.Hour)
	assert.Empty(t, w.take(), "nothing is owed in review")
	w.hear(b, "MERGED db")
	w.advance(time.Minute)
	assert.Equal(t, []string{"CLAIM auth"}, w.take(), "free again, it takes what is left of the last TASKS")
}

func TestBuilderChecksInWellInsideTheInterval(t *testing.T) {
	w, b := newWorld(t, me), newBuilder("ada", steady())
	claimed(w, b, "db")
	for range 3 {
		w.advance(3*time.Minute + 20*time.Second)
		assert.Len(t, w.take(), 1)
	}
}

func TestBuilderLosingARaceTriesAnother(t *testing.T) {
	w, b := newWorld(t, me), newBuilder("bea", steady())
	w.hear(b, "TASKS db cache")
	// The winner's ACK comes before this builder's claim goes out: it
	// decided on hearing TASKS, so it still claims db and loses.
	w.hear(b, "ACK db @ada")
	w.advance(time.Minute)
	assert.Equal(t, []string{"CLAIM db"}, w.take())
	w.hear(b, "REJECT db "+me+" owned by @ada; CLAIM another component from TASKS")
	w.advance(time.Minute)
	assert.Equal(t, []string{"CLAIM cache"}, w.take())
}

func TestBuilderTakesOnlyWhatItPrefersInOrder(t *testing.T) {
	s := steady()
	s.Prefer = []string{"web", "cart"}
	w, b := newWorld(t, me), newBuilder("cal", s)
	w.hear(b, "TASKS db auth")
	w.advance(time.Hour)
	assert.Empty(t, w.take())
	w.hear(b, "TASKS cart web")
	w.advance(time.Minute)
	assert.Equal(t, []string{"CLAIM web"}, w.take())
}

func TestRestingBuilderRemembersWhatWasTaken(t *testing.T) {
	s := steady()
	s.Rest = 20 * time.Minute
	w, b := newWorld(t, me), newBuilder("ada", s)
	claimed(w, b, "db")
	w.advance(15 * time.Minute)
	w.take()
	w.hear(b, "MERGED db")
	w.hear(b, "TASKS auth catalog")
	w.hear(b, "ACK auth @bea")
	w.advance(17 * time.Minute)
	assert.Empty(t, w.take(), "resting")
	w.advance(7 * time.Minute)
	assert.Equal(t, []string{"CLAIM catalog"}, w.take(), "auth went to @bea meanwhile")
}

func TestSilentBuilderTimesOutAndLeavesTheComponent(t *testing.T) {
	s := steady()
	s.Quirks = map[string]Quirk{"catalog": {Kind: GoSilent, After: 1}}
	w, b := newWorld(t, me), newBuilder("cal", s)
	claimed(w, b, "catalog")
	w.advance(2 * time.Hour)
	assert.Equal(t, []string{"PROGRESS catalog 25"}, w.take(), "one check-in, then nothing")
	w.hear(b, "TIMEOUT catalog "+me)
	w.hear(b, "TASKS catalog")
	w.advance(time.Hour)
	assert.Empty(t, w.take(), "it never claims what it went silent on")
	w.hear(b, "TASKS catalog cart")
	w.advance(time.Minute)
	assert.Equal(t, []string{"CLAIM cart"}, w.take())
}

func TestTimedOutBuilderMayClaimAgain(t *testing.T) {
	w, b := newWorld(t, me), newBuilder("ada", steady())
	claimed(w, b, "db")
	w.hear(b, "TIMEOUT db "+me)
	w.advance(time.Hour)
	assert.Empty(t, w.take(), "its work stopped with the TIMEOUT")
	w.hear(b, "TASKS db")
	w.advance(time.Minute)
	assert.Equal(t, []string{"CLAIM db"}, w.take())
	w.hear(b, "ACK db "+me+" after TIMEOUT of "+me+": progress 25%")
	w.advance(4 * time.Minute)
	assert.Equal(t, []string{"PROGRESS db 43 picking up from 25%"}, w.take())
}

func TestFixThenReadyAgain(t *testing.T) {
	w, b := newWorld(t, me), newBuilder("bea", steady())
	claimed(w, b, "auth")
	w.advance(15 * time.Minute)
	w.take()
	w.hear(b, "REVIEW auth "+me+" bea/auth")
	w.hear(b, "FIX auth "+me+" 1/2 no tests for token refresh")
	w.advance(8 * time.Minute)
	assert.Equal(t, []string{"PROGRESS auth 80 fixing: no tests for token refresh", "READY auth bea/auth"}, w.take())
}

func TestRetriedBuilderNeverClaimsThatComponentAgain(t *testing.T) {
	w, b := newWorld(t, me), newBuilder("dex", steady())
	claimed(w, b, "cart")
	w.advance(15 * time.Minute)
	w.take()
	w.hear(b, "RETRY cart "+me)
	w.hear(b, "TASKS cart")
	w.advance(time.Hour)
	assert.Empty(t, w.take())
}

func TestBlockedBuilderChecksInUntilUnblocked(t *testing.T) {
	s := steady()
	s.Quirks = map[string]Quirk{"mailer": {Kind: Block, After: 1, Dep: "web", Reason: "needs the template"}}
	w, b := newWorld(t, me), newBuilder("cal", s)
	claimed(w, b, "mailer")
	w.advance(7 * time.Minute)
	assert.Equal(t, []string{"PROGRESS mailer 25", "BLOCKED mailer web needs the template"}, w.take())
	w.hear(b, "WAIT mailer "+me+" web")
	w.advance(10 * time.Minute)
	assert.Equal(t, []string{"PROGRESS mailer 25 waiting for web", "PROGRESS mailer 25 waiting for web", "PROGRESS mailer 25 waiting for web"}, w.take(),
		"a blocked component still owes check-ins")
	w.hear(b, "UNBLOCKED mailer "+me)
	w.advance(10 * time.Minute)
	assert.Equal(t, []string{"PROGRESS mailer 50 unblocked, going on", "PROGRESS mailer 75", "READY mailer cal/mailer"}, w.take())
}

func TestAbortGivesTheComponentUp(t *testing.T) {
	s := steady()
	s.Quirks = map[string]Quirk{"payments": {Kind: Abort, After: 2, Reason: "invalid_specification: refunds"}}
	w, b := newWorld(t, me), newBuilder("bea", s)
	claimed(w, b, "payments")
	w.advance(time.Hour)
	assert.Equal(t, []string{"PROGRESS payments 25", "PROGRESS payments 50", "ABORT payments invalid_specification: refunds"}, w.take())
	w.hear(b, "ESCALATE payments hard-blocker invalid_specification: refunds (from @me, who let payments go)")
	w.hear(b, "TASKS payments")
	w.advance(time.Hour)
	assert.Empty(t, w.take(), "it gave payments up for good")
}

func TestHeldBuilderWaitsForTheOperator(t *testing.T) {
	w, b := newWorld(t, me), newBuilder("ada", steady())
	claimed(w, b, "docs")
	w.advance(4 * time.Minute)
	assert.Equal(t, []string{"PROGRESS docs 25"}, w.take())
	w.hear(b, "ESCALATE docs need-info @me needs styleguide, which is not a component of the build")
	w.advance(time.Hour)
	assert.Empty(t, w.take(), "held: lines would be refused")
	w.hear(b, "ACK docs "+me+" resolved by @op")
	w.advance(4 * time.Minute)
	assert.Equal(t, []string{"PROGRESS docs 50"}, w.take())
}

func TestEscalationsThatHoldNothingDoNotStopWork(t *testing.T) {
	w, b := newWorld(t, me), newBuilder("ada", steady())
	claimed(w, b, "db")
	w.hear(b, "ESCALATE db claim-dispute @x sent 3 builder lines about db")
	w.advance(4 * time.Minute)
	assert.Equal(t, []string{"PROGRESS db 25"}, w.take())
}

func TestAssignedBuilderStartsWork(t *testing.T) {
	w, b := newWorld(t, me), newBuilder("ada", steady())
	w.hear(b, "ACK web "+me)
	w.advance(4 * time.Minute)
	assert.Equal(t, []string{"PROGRESS web 25"}, w.take())
}

func TestBuilderJoiningLateCatchesUpFromHistory(t *testing.T) {
	w, b := newWorld(t, me), newBuilder("dex", steady())
	for _, l := range []string{"TASKS db", "ACK db @ada", "MERGED db", "TASKS auth catalog", "ACK auth @bea", "REVIEW x @y pr"} {
		r, _ := parseReply(l)
		b.catchUp(r)
	}
	assert.Empty(t, w.take(), "history is learned from, never acted on")
	b.start(w)
	w.advance(time.Minute)
	assert.Equal(t, []string{"CLAIM catalog"}, w.take())
}

func TestBuilderPicksUpFromTheProgressTheACKReports(t *testing.T) {
	w, b := newWorld(t, me), newBuilder("cal", steady())
	w.hear(b, "TASKS cart")
	w.advance(time.Minute)
	assert.Equal(t, []string{"CLAIM cart"}, w.take())
	w.hear(b, "ACK cart "+me+" after RETRY of @dex (2/2 audits failed): progress 80%, PR dex/cart, last audit: discounts ignored")
	w.advance(4 * time.Minute)
	assert.Equal(t, []string{"PROGRESS cart 85 picking up from 80%"}, w.take())
}

func TestBuilderPushesBeforeEachReady(t *testing.T) {
	type push struct {
		c, branch string
		fixes     int
	}
	var pushed []push
	s := steady()
	s.Push = func(c, branch string, fixes int) error {
		pushed = append(pushed, push{c, branch, fixes})
		if fixes == 1 {
			return errors.New("remote hung up")
		}
		return nil
	}
	w, b := newWorld(t, me), newBuilder("ada", s)
	claimed(w, b, "db")
	w.advance(14 * time.Minute)
	assert.Equal(t, "READY db ada/db", last(w.take()))
	w.hear(b, "FIX db "+me+" 1/5 CI failed: abc make: FAIL")
	w.advance(7 * time.Minute)
	assert.Equal(t, []string{"PROGRESS db 80 fixing: CI failed: abc make: FAIL", "PROGRESS db 100 push failed: remote hung up", "READY db ada/db"}, w.take())
	assert.Equal(t, []push{{"db", "ada/db", 0}, {"db", "ada/db", 1}}, pushed)
}

func last(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return lines[len(lines)-1]
}

func TestBuilderHearsMergedInMergeModeExternal(t *testing.T) {
	w, b := newWorld(t, me), newBuilder("ada", steady())
	claimed(w, b, "db")
	w.hear(b, "TASKS auth")
	w.advance(14 * time.Minute)
	assert.Equal(t, "READY db ada/db", last(w.take()))
	w.hear(b, "OK MERGED db")
	w.advance(time.Minute)
	assert.Equal(t, []string{"CLAIM auth"}, w.take(), "free again once foreman took the merger's MERGED")
}

// A builder whose component an operator RELEASEs, or gives to another,
// stops working on it at once: no more PROGRESS or READY for a component
// it does not own (each would be refused, and three make a claim
// dispute). A released one does not claim it again.
func TestBuilderStopsWhenItsComponentIsTakenAway(t *testing.T) {
	for _, tc := range []struct{ name, line, next string }{
		{"released", "OK RELEASE db from " + me, "CLAIM auth"},
		{"released, said as the contract's bare OK", "OK RELEASE db", "CLAIM auth"},
		{"assigned to another", "ACK db @bea after ASSIGN of " + me + ": progress 25%", "CLAIM auth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, b := newWorld(t, me), newBuilder("ada", steady())
			w.hear(b, "TASKS db auth")
			w.advance(time.Minute)
			assert.Equal(t, []string{"CLAIM db"}, w.take())
			w.hear(b, "ACK db "+me)
			w.advance(4 * time.Minute)
			assert.Equal(t, []string{"PROGRESS db 25"}, w.take())
			w.hear(b, tc.line)
			w.advance(time.Hour)
			assert.Equal(t, []string{tc.next}, w.take(), "nothing more about db")
		})
	}
	// Another builder's component released changes nothing here.
	w, b := newWorld(t, me), newBuilder("ada", steady())
	claimed(w, b, "db")
	w.hear(b, "OK RELEASE auth from @bea")
	w.advance(4 * time.Minute)
	assert.Equal(t, []string{"PROGRESS db 25"}, w.take())
}

// A builder started again while it owns a component (foreman up restarts
// one that crashed) is refused the next it claims, and claims back what
// it owns: foreman ACKs its owner again, and the work goes on.
func TestBuilderStartedAgainResumesWhatItOwns(t *testing.T) {
	w, b := newWorld(t, me), newBuilder("ada", steady())
	w.hear(b, "TASKS auth")
	w.advance(time.Minute)
	assert.Equal(t, []string{"CLAIM auth"}, w.take())
	w.hear(b, "REJECT auth "+me+" you already own db (at most 1 at a time); finish or ABORT first")
	assert.Equal(t, []string{"CLAIM db"}, w.take())
	w.hear(b, "ACK db "+me)
	w.advance(12*time.Minute + 2*time.Minute)
	assert.Equal(t, []string{"PROGRESS db 25", "PROGRESS db 50", "PROGRESS db 75", "READY db ada/db"}, w.take())
}

// A builder started again while the room's history shows it owns a
// component claims that one back first: foreman ACKs its owner again.
// What it owned and lost (merged, timed out, released) it does not.
func TestBuilderStartedAgainClaimsWhatTheHistorySaysItOwns(t *testing.T) {
	w, b := newWorld(t, me), newBuilder("ada", steady())
	for _, l := range []string{"TASKS db cache", "ACK cache " + me, "MERGED cache", "TASKS db", "ACK db " + me, "TASKS web"} {
		r, _ := parseReply(l)
		b.catchUp(r)
	}
	b.start(w)
	assert.Equal(t, []string{"CLAIM db"}, w.take())

	w, b = newWorld(t, me), newBuilder("ada", steady())
	for _, l := range []string{"TASKS db web", "ACK db " + me, "TIMEOUT db " + me, "TASKS db web"} {
		r, _ := parseReply(l)
		b.catchUp(r)
	}
	b.start(w)
	assert.Empty(t, w.take(), "timed out: it thinks before it claims again")
	w.advance(time.Minute)
	assert.Equal(t, []string{"CLAIM db"}, w.take(), "from TASKS, as any builder")
}

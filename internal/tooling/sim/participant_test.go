package sim

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/agentchat/server"
)

const wait = 10 * time.Second

// room is an embedded server and a client standing in for the coordinator.
type room struct {
	t      *testing.T
	url    string
	coord  *agentchat.Client
	ctx    context.Context
	cancel context.CancelFunc
	seq    uint64 // the last line said through said
}

func newRoom(t *testing.T) *room {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := server.Start(ctx, server.Config{Listen: "127.0.0.1:0", Channels: []string{"#build"}, RateLimit: 5 * time.Millisecond, Logger: zerolog.Nop()})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	id, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	r := &room{t: t, url: srv.URL(), ctx: ctx, cancel: cancel,
		coord: agentchat.New(agentchat.Config{URL: srv.URL(), Channel: "#build", Identity: id, RateLimit: 5 * time.Millisecond, Logger: zerolog.Nop()})}
	done := make(chan struct{})
	go func() { defer close(done); _ = r.coord.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	r.next(func(e agentchat.Event) bool { _, ok := e.(agentchat.Joined); return ok })
	return r
}

// next waits for the coordinator's client to see an event match accepts.
func (r *room) next(accept func(agentchat.Event) bool) {
	r.t.Helper()
	timeout := time.After(wait)
	for {
		select {
		case e := <-r.coord.Events():
			if accept(e) {
				return
			}
		case <-timeout:
			r.t.Fatal("timed out waiting in the room")
		}
	}
}

// heard waits for a line from id that starts with prefix.
func (r *room) heard(id, prefix string) string {
	r.t.Helper()
	var got string
	r.next(func(e agentchat.Event) bool {
		m, ok := e.(agentchat.Message)
		if !ok || m.From != id {
			return false
		}
		for _, l := range strings.Split(m.Content, "\n") {
			if strings.HasPrefix(l, prefix) {
				got = l
				return true
			}
		}
		return false
	})
	return got
}

func (r *room) say(l string) { r.coord.Send(agentchat.Line{Text: l}) }

// said says l and waits until the room has it: whatever anyone says after
// comes after it in the room's history. (Waiting for the next Delivered is
// not enough when an earlier say is still on its way: that one's Delivered
// may come first.)
func (r *room) said(l string) {
	r.t.Helper()
	r.seq++
	seq := r.seq
	r.coord.Send(agentchat.Line{Seq: seq, Text: l})
	r.next(func(e agentchat.Event) bool {
		d, ok := e.(agentchat.Delivered)
		return ok && slices.Contains(d.Seqs, seq)
	})
}

func (r *room) join(p *Participant) {
	r.t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.Run(r.ctx) }()
	r.t.Cleanup(func() {
		r.cancel()
		select {
		case err := <-done:
			assert.NoError(r.t, err)
		case <-time.After(wait):
			r.t.Error("the participant did not stop")
		}
	})
	select {
	case <-p.Joined():
	case <-time.After(wait):
		r.t.Fatal("the participant never joined")
	}
}

func TestBuilderOverWebSockets(t *testing.T) {
	r := newRoom(t)
	s := DefaultBuilder()
	p, err := NewBuilder(Config{URL: r.url, Channel: "#build", Name: "ada", Minute: 10 * time.Millisecond,
		RateLimit: 5 * time.Millisecond, Logger: zerolog.Nop()}, s)
	require.NoError(t, err)
	assert.Equal(t, RoleBuilder, p.Role())
	r.join(p)

	// Nobody told it who the coordinator is: the first TASKS tells it.
	r.say("TASKS api")
	assert.Equal(t, "CLAIM api", r.heard(p.ID(), "CLAIM"))
	r.say("ACK api " + p.ID())
	assert.Equal(t, "PROGRESS api 25", r.heard(p.ID(), "PROGRESS"))
	assert.Equal(t, "READY api ada/api", r.heard(p.ID(), "READY"))
}

func TestOperatorOverWebSockets(t *testing.T) {
	r := newRoom(t)
	p, err := NewOperator(Config{URL: r.url, Channel: "#build", Name: "olga", Minute: 10 * time.Millisecond,
		RateLimit: 5 * time.Millisecond, Coordinator: r.coord.AgentID(), Logger: zerolog.Nop()}, Operator{})
	require.NoError(t, err)
	r.join(p)
	r.say("ESCALATE api hard-blocker invalid_specification: two keys")
	assert.Equal(t, "RESOLVE api decided", r.heard(p.ID(), "RESOLVE"))
}

func TestLateBuilderClaimsFromTheRoomsHistory(t *testing.T) {
	r := newRoom(t)
	r.say("TASKS api web\nACK api @someone")
	r.next(func(e agentchat.Event) bool { _, ok := e.(agentchat.Delivered); return ok }) // the room has it
	p, err := NewBuilder(Config{URL: r.url, Channel: "#build", Name: "late", Minute: 10 * time.Millisecond,
		RateLimit: 5 * time.Millisecond, Logger: zerolog.Nop()}, DefaultBuilder())
	require.NoError(t, err)
	r.join(p)
	assert.Equal(t, "CLAIM web", r.heard(p.ID(), "CLAIM"))
}

// An auditor started (or restarted) after foreman asked for a review that
// nobody has answered takes it up: otherwise the review waits for
// audit-overdue and then for a human. Found running the README's path on a
// stock server, where the auditor came after the first REVIEW.
func TestLateAuditorAnswersTheReviewNobodyAnswered(t *testing.T) {
	r := newRoom(t)
	r.say("TASKS api web db\nREVIEW api @b1 b1/api\nREVIEW web @b2 b2/web\nREVIEW db @b3 b3/db")
	r.next(func(e agentchat.Event) bool { _, ok := e.(agentchat.Delivered); return ok })
	r.say("ESCALATE api audit-overdue no AUDIT verdict 5m after REVIEW of b1/api by @b1\nFIX web @b2 1/3 no tests")
	r.next(func(e agentchat.Event) bool { _, ok := e.(agentchat.Delivered); return ok })
	other, err := agentchat.NewIdentity("aud1")
	require.NoError(t, err)
	a1 := agentchat.New(agentchat.Config{URL: r.url, Channel: "#build", Identity: other, RateLimit: 5 * time.Millisecond, Logger: zerolog.Nop()})
	done := make(chan struct{})
	go func() { defer close(done); _ = a1.Run(r.ctx) }()
	t.Cleanup(func() { r.cancel(); <-done })
	a1.Send(agentchat.Line{Text: "AUDIT db PASS"})
	r.heard(other.AgentID(), "AUDIT db")

	p, err := NewAuditor(Config{URL: r.url, Channel: "#build", Name: "late", Minute: 10 * time.Millisecond,
		RateLimit: 5 * time.Millisecond, Coordinator: r.coord.AgentID(), Logger: zerolog.Nop()}, Auditor{})
	require.NoError(t, err)
	r.join(p)
	// api waits (audit-overdue leaves it in review); web went back to its
	// builder; db has had its verdict from another auditor.
	assert.Equal(t, "AUDIT api PASS", r.heard(p.ID(), "AUDIT"))
	r.say("MERGED api\nREVIEW web @b2 b2/web")
	assert.Equal(t, "AUDIT web PASS", r.heard(p.ID(), "AUDIT"), "the next line it says is about web, not db")
}

// A participant shows the room's history at the times it was said, not as
// if it had just been said: a late builder's screen said "10:17:03 b1 CLAIM
// db" for a claim made half a minute before it came.
func TestShowGivesTheHistoryItsOwnTime(t *testing.T) {
	r := newRoom(t)
	r.say("TASKS api")
	r.next(func(e agentchat.Event) bool { _, ok := e.(agentchat.Delivered); return ok })
	type shown struct {
		at   time.Time
		line string
	}
	got := make(chan shown, 16)
	joining := time.Now()
	p, err := NewBuilder(Config{URL: r.url, Channel: "#build", Name: "late", Minute: 10 * time.Millisecond,
		RateLimit: 5 * time.Millisecond, Logger: zerolog.Nop(),
		Show: func(at time.Time, _, _, line string) { got <- shown{at, line} }}, DefaultBuilder())
	require.NoError(t, err)
	r.join(p)
	tasks := <-got
	assert.Equal(t, "TASKS api", tasks.line)
	assert.False(t, tasks.at.IsZero(), "the room's time")
	assert.True(t, tasks.at.Before(joining), "said before the builder came: %s, came %s", tasks.at, joining)
	claim := <-got
	assert.Equal(t, "CLAIM api", claim.line)
	assert.True(t, claim.at.IsZero(), "its own line, said now")
}

// A CI bot started late runs the checks still owed: a READY in the room's
// history with no CI verdict and nothing from foreman since that took the
// component out of CI.
func TestLateCIAnswersTheReadyNobodyChecked(t *testing.T) {
	r := newRoom(t)
	b, err := agentchat.NewIdentity("b1")
	require.NoError(t, err)
	b1 := agentchat.New(agentchat.Config{URL: r.url, Channel: "#build", Identity: b, RateLimit: 5 * time.Millisecond, Logger: zerolog.Nop()})
	done := make(chan struct{})
	go func() { defer close(done); _ = b1.Run(r.ctx) }()
	t.Cleanup(func() { r.cancel(); <-done })
	// TASKS is in the room before the READYs: said after them, it would
	// say foreman put them back to be claimed, and no CI would be owed.
	r.said("TASKS api web db")
	b1.Send(agentchat.Line{Seq: 1, Text: "READY api b1/api\nREADY web b1/web\nREADY db b1/db"})
	r.heard(b.AgentID(), "READY")
	r.said("FIX web " + b.AgentID() + " 1/5 CI failed: lint")
	b1.Send(agentchat.Line{Seq: 2, Text: "CI db PASS"}) // someone else's verdict
	r.heard(b.AgentID(), "CI db")

	p, err := NewCI(Config{URL: r.url, Channel: "#build", Name: "ci", Minute: 10 * time.Millisecond,
		RateLimit: 5 * time.Millisecond, Coordinator: r.coord.AgentID(), Logger: zerolog.Nop()}, CI{})
	require.NoError(t, err)
	r.join(p)
	assert.Equal(t, "CI api PASS", r.heard(p.ID(), "CI"))
	b1.Send(agentchat.Line{Seq: 3, Text: "READY web b1/web"})
	assert.Equal(t, "CI web PASS", r.heard(p.ID(), "CI"), "the next line it says is about web, not db")
}

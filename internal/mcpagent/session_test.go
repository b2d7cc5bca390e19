package mcpagent

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
	"github.com/agentforeman/foreman/protocol"
)

const patience = time.Minute

// standIn is a room with a peer that plays foreman by hand, and a session
// for one agent.
func standIn(t *testing.T, answerWait time.Duration) (*Session, *roomtest.Peer, *roomtest.Peer) {
	room := roomtest.Start(t)
	fm := room.Join(t, "foreman")
	id, err := agentchat.NewIdentity("ada")
	require.NoError(t, err)
	s, err := New(Config{
		Room:        agentchat.Config{URL: room.URL(), Channel: "#build", Identity: id, RateLimit: room.Rate(), Logger: zerolog.Nop()},
		Coordinator: fm.ID, AnswerWait: answerWait, WaitMax: patience,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-s.Joined():
	case <-time.After(patience):
		t.Fatal("the session never joined")
	}
	other := room.Join(t, "other")
	return s, fm, other
}

// ask runs a request in the background.
func ask(s *Session, m matcher, lines ...string) <-chan Answer {
	out := make(chan Answer, 1)
	m.self = s.ID()
	go func() {
		a, _ := s.say(context.Background(), m, lines...)
		out <- a
	}()
	return out
}

func got(t *testing.T, c <-chan Answer) Answer {
	t.Helper()
	select {
	case a := <-c:
		return a
	case <-time.After(patience):
		t.Fatal("no answer")
	}
	return Answer{}
}

// A reply counts only after the request reached the room, only when it is
// about the request's component and addressed to this agent; the rest
// goes to wait().
func TestAnswersAreMatchedToTheRequest(t *testing.T) {
	s, fm, _ := standIn(t, patience)
	me := s.ID()
	c := ask(s, matcher{kind: askClaim, c: "db"}, "CLAIM db")
	fm.Await(me, "CLAIM db")
	fm.SayLines([]string{"ACK db @00000000000000bb", "REJECT api " + me + " not yours", "TASKS db api", "ACK db " + me + " after TIMEOUT of @00000000000000bb: progress 40%"})
	a := got(t, c)
	require.True(t, a.Answered)
	assert.True(t, a.Accepted)
	assert.Len(t, a.Replies, 1)
	assert.Equal(t, "progress 40%", a.Replies[0].Reply.Text[len(a.Replies[0].Reply.Text)-len("progress 40%"):])
	assert.Contains(t, a.Note, "db is yours")

	evs, err := s.Wait(context.Background(), time.Second)
	require.NoError(t, err)
	var lines []string
	for _, e := range evs {
		lines = append(lines, e.Text)
	}
	assert.Equal(t, []string{"REJECT api " + me + " not yours", "TASKS db api"}, lines, "what the claim did not take and concerns ada; not another's ACK")
}

// foreman says nothing to an accepted PROGRESS: STATUS c, asked with it,
// is the answer, and only a STATUS that shows the new progress ends it.
func TestSilentAnswersEndWithStatus(t *testing.T) {
	s, fm, _ := standIn(t, patience)
	me := s.ID()
	c := ask(s, matcher{kind: askProgress, c: "db", pct: 40}, "PROGRESS db 40 schema", "STATUS db")
	fm.Await(me, "STATUS db")
	fm.Say("STATUS db building owner=" + me + " progress=10%") // an older STATUS, asked by someone else
	fm.Say("STATUS db building owner=" + me + " progress=40%")
	a := got(t, c)
	require.True(t, a.Answered, a.Note)
	assert.True(t, a.Accepted)
	assert.Len(t, a.Replies, 2)

	c = ask(s, matcher{kind: askProgress, c: "db", pct: 50}, "PROGRESS db 50", "STATUS db")
	fm.Await(me, "STATUS db")
	fm.SayLines([]string{"REJECT db " + me + " timed out; CLAIM again", "STATUS db pending"})
	a = got(t, c)
	assert.True(t, a.Answered)
	assert.False(t, a.Accepted)
	assert.Equal(t, "refused: timed out; CLAIM again; nothing changed", a.Note)
}

// No answer within the wait: the tool says so, and the answer, when it
// comes, goes to wait().
func TestNoAnswerYet(t *testing.T) {
	s, fm, _ := standIn(t, 300*time.Millisecond)
	me := s.ID()
	c := ask(s, matcher{kind: askClaim, c: "db"}, "CLAIM db")
	a := got(t, c)
	assert.False(t, a.Answered)
	assert.False(t, a.Accepted)
	assert.Contains(t, a.Note, "no answer from foreman yet")
	fm.Await(me, "CLAIM db")
	fm.Say("ACK db " + me)
	evs, err := s.Wait(context.Background(), patience)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.Equal(t, "ACK", evs[0].Reply.Verb)
}

// Lines that are not protocol lines are never sent.
func TestMalformedLinesAreNotSent(t *testing.T) {
	s, _, _ := standIn(t, patience)
	_, err := s.say(context.Background(), matcher{kind: askProgress, c: "db"}, "PROGRESS db lots")
	assert.ErrorContains(t, err, `not sent: PROGRESS: "lots" is not a percentage`)
}

// wait() also returns lines of others that mention the agent, and the
// board request ends with the message that carried the board.
func TestMentionsAndTheBoard(t *testing.T) {
	s, fm, other := standIn(t, patience)
	me := s.ID()
	other.Say("hi @ada, can you look at db?")
	other.Say("nothing for anyone")
	evs, err := s.Wait(context.Background(), patience)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.Equal(t, "hi @ada, can you look at db?", evs[0].Text)
	assert.False(t, evs[0].Coordinator)

	c := ask(s, matcher{kind: askBoard}, "STATUS")
	fm.Await(me, "STATUS")
	fm.SayLines([]string{"STATUS db merged", "STATUS api pending"})
	a := got(t, c)
	assert.True(t, a.Answered)
	assert.Len(t, a.Replies, 2)
}

func TestWaitTimesOutEmpty(t *testing.T) {
	s, _, _ := standIn(t, patience)
	evs, err := s.Wait(context.Background(), 50*time.Millisecond)
	require.NoError(t, err)
	assert.Empty(t, evs)
}

// The lines of one message come to wait() together: a waiting agent woken
// by "MERGED db" got it alone, and the "TASKS auth" said with it only at
// its next wait(), after it had claimed auth (found driving foreman mcp
// against a stock server).
func TestWaitGetsAMessagesLinesTogether(t *testing.T) {
	s, fm, _ := standIn(t, patience)
	me := s.ID()
	c := ask(s, matcher{kind: askClaim, c: "db"}, "CLAIM db")
	fm.Await(me, "CLAIM db")
	fm.Say("ACK db " + me)
	require.True(t, got(t, c).Accepted)

	type waited struct {
		evs []Event
		err error
	}
	out := make(chan waited, 1)
	go func() {
		evs, err := s.Wait(context.Background(), patience)
		out <- waited{evs, err}
	}()
	require.Eventually(t, func() bool {
		n := 0
		s.do(context.Background(), func() { n = len(s.waiters) })
		return n == 1
	}, patience, time.Millisecond, "the agent waits")
	fm.SayLines([]string{"MERGED db", "TASKS auth"})
	w := <-out
	require.NoError(t, w.err)
	var lines []string
	for _, e := range w.evs {
		lines = append(lines, e.Text)
	}
	assert.Equal(t, []string{"MERGED db", "TASKS auth"}, lines)
}

// With merge mode external the merge is the merger's (foreman host's)
// "MERGED db", which foreman confirms as "OK MERGED db": that is the
// agent's MERGED too. wait() used to return nothing for it and the agent
// kept holding db (found with foreman host on a stock server).
func TestOKMergedEndsTheHolding(t *testing.T) {
	s, fm, host := standIn(t, patience)
	me := s.ID()
	c := ask(s, matcher{kind: askClaim, c: "db"}, "CLAIM db")
	fm.Await(me, "CLAIM db")
	fm.Say("ACK db " + me)
	require.True(t, got(t, c).Accepted)
	fm.Say("REVIEW db " + me + " ada/db")
	evs, err := s.Wait(context.Background(), patience)
	require.NoError(t, err)
	require.Len(t, evs, 1)

	host.Say("MERGED db")
	fm.Say("OK MERGED db")
	evs, err = s.Wait(context.Background(), patience)
	require.NoError(t, err)
	require.Len(t, evs, 1, "foreman's OK MERGED db is news")
	assert.Equal(t, "OK MERGED db", evs[0].Text)
	assert.Empty(t, s.Holdings(context.Background()), "db is merged: nothing held")
}

// A PROGRESS may name the branch the work in progress is pushed to
// (contract section 10): only a STATUS that shows it ends the request,
// and a ref that is not one is refused before anything is sent.
func TestProgressNamesTheBranch(t *testing.T) {
	s, fm, _ := standIn(t, patience)
	me := s.ID()
	c := ask(s, matcher{kind: askProgress, c: "db", pct: 40, branch: "ada/db"}, "PROGRESS db 40 branch=ada/db schema", "STATUS db")
	fm.Await(me, "STATUS db")
	fm.Say("STATUS db building owner=" + me + " progress=40%") // before the branch was kept
	fm.Say("STATUS db building owner=" + me + " progress=40% branch=ada/db")
	a := got(t, c)
	require.True(t, a.Answered, a.Note)
	assert.Len(t, a.Replies, 2)

	_, err := s.say(context.Background(), matcher{kind: askProgress, c: "db"}, "PROGRESS db 40 branch=--upload-pack=x")
	assert.ErrorContains(t, err, "not sent: PROGRESS: bad branch=: ref --upload-pack=x starts with -")
}

// After a departure foreman's ACK names the branch the last builder left,
// and the host then pins its tip and says so: claim() returns both. A
// handoff line from anyone but the host, or for another agent, is not
// taken.
func TestClaimGetsTheHandoff(t *testing.T) {
	room := roomtest.Start(t)
	fm := room.Join(t, "foreman")
	host := room.Join(t, "host")
	mallory := room.Join(t, "mallory")
	id, err := agentchat.NewIdentity("ada")
	require.NoError(t, err)
	s, err := New(Config{
		Room:        agentchat.Config{URL: room.URL(), Channel: "#build", Identity: id, RateLimit: room.Rate(), Logger: zerolog.Nop()},
		Coordinator: fm.ID, AnswerWait: patience, WaitMax: patience, Hosts: []string{host.ID}, HandoffWait: patience,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-s.Joined()
	me := s.ID()
	tip := "0123456789abcdef0123456789abcdef01234567"
	fake := "fedcba9876543210fedcba9876543210fedcba98"

	out := make(chan Answer, 1)
	go func() {
		a, _ := s.claim(context.Background(), "db")
		out <- a
	}()
	fm.Await(me, "CLAIM db")
	fm.Say("ACK db " + me + " branch=b1/db after TIMEOUT of @00000000000000b1: progress 40%")
	host.Await(fm.ID, "ACK db") // the host says its line once it has heard the ACK
	mallory.Say(me + " db: refs/foreman/handoff/db/1 (" + fake + ") keeps the work")
	host.Await(mallory.ID, me+" db:") // so the session has it before the host's own
	line, ok := protocol.HandoffLine(protocol.Handoff{To: "@00000000000000cc", Component: "db", N: 1, Commit: fake})
	require.True(t, ok)
	host.Say(line) // for another agent
	line, ok = protocol.HandoffLine(protocol.Handoff{To: me, Component: "db", N: 1, Commit: tip, From: "@00000000000000b1", Branch: "b1/db"})
	require.True(t, ok)
	host.Say(line)
	a := got(t, out)
	require.True(t, a.Accepted, a.Note)
	require.NotNil(t, a.Handoff)
	assert.Equal(t, Handoff{Component: "db", Branch: "b1/db", Ref: "refs/foreman/handoff/db/1", Commit: tip, From: "@00000000000000b1"}, *a.Handoff)
	assert.Contains(t, a.Note, "the host pinned it as refs/foreman/handoff/db/1 ("+tip+")")

	// wait() returns the host's line, read.
	var handed []*Handoff
	require.Eventually(t, func() bool {
		evs, _ := s.Wait(context.Background(), 10*time.Millisecond)
		for _, e := range evs {
			if e.Handoff != nil {
				handed = append(handed, e.Handoff)
			}
		}
		return len(handed) > 0
	}, patience, time.Millisecond)
	assert.Equal(t, tip, handed[0].Commit)
	assert.Len(t, handed, 1, "mallory's line is not read as a handoff")
}

// Without a host the ACK's branch is all there is: claim() says so after
// the wait, and the branch is still handed over.
func TestClaimWithoutAHost(t *testing.T) {
	s, fm, _ := standIn(t, patience)
	s.cfg.HandoffWait = 50 * time.Millisecond
	me := s.ID()
	out := make(chan Answer, 1)
	go func() {
		a, _ := s.claim(context.Background(), "db")
		out <- a
	}()
	fm.Await(me, "CLAIM db")
	fm.Say("ACK db " + me + " branch=b1/db after RELEASE of @00000000000000b1: no progress reported")
	a := got(t, out)
	require.True(t, a.Accepted)
	assert.Equal(t, &Handoff{Component: "db", Branch: "b1/db"}, a.Handoff)
	assert.Contains(t, a.Note, "its work is on b1/db")
	assert.Contains(t, a.Note, "no host pinned it (yet)")
}

// The host's OVERLAP naming a component the agent holds comes to wait():
// its work and another's would conflict.
func TestOverlapIsNews(t *testing.T) {
	s, fm, host := standIn(t, patience)
	me := s.ID()
	c := ask(s, matcher{kind: askClaim, c: "db"}, "CLAIM db")
	fm.Await(me, "CLAIM db")
	fm.Say("ACK db " + me)
	require.True(t, got(t, c).Accepted)
	host.Say("OVERLAP web api routes.go") // not ada's
	host.Say("OVERLAP api db schema.sql")
	evs, err := s.Wait(context.Background(), patience)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.Equal(t, "OVERLAP api db schema.sql", evs[0].Text)
}

// An agent not in wait() is told that something came for it, without
// polling: a client subscribed to foreman://inbox gets
// notifications/resources/updated, reads what waits there, and wait()
// returns it at once.
func TestNewsIsToldToASubscribedClient(t *testing.T) {
	s, fm, _ := standIn(t, patience)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Server("test").Connect(ctx, st, nil)
	require.NoError(t, err)
	defer ss.Close()
	told := make(chan string, 10)
	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { told <- r.Params.URI },
	})
	acked := make(chan struct{}, 1)
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/subscriptions/acknowledged" {
				acked <- struct{}{}
			}
			return next(ctx, method, req)
		}
	})
	cs, err := client.Connect(ctx, ct, nil)
	require.NoError(t, err)
	defer cs.Close()
	require.NoError(t, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: InboxURI}))
	select {
	case <-acked: // the server has the subscription (Subscribe does not wait for it)
	case <-time.After(patience):
		t.Fatal("the subscription was not acknowledged")
	}

	fm.Say("TASKS db api")
	select {
	case uri := <-told:
		assert.Equal(t, InboxURI, uri)
	case <-time.After(patience):
		t.Fatal("the client was not told")
	}
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: InboxURI})
	require.NoError(t, err)
	var inbox struct{ Events []Event }
	require.NoError(t, json.Unmarshal([]byte(res.Contents[0].Text), &inbox))
	require.Len(t, inbox.Events, 1)
	assert.Equal(t, "TASKS db api", inbox.Events[0].Text)

	call, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{"timeout_seconds": patience.Seconds()}})
	require.NoError(t, err)
	raw, err := json.Marshal(call.StructuredContent)
	require.NoError(t, err)
	var w WaitResult
	require.NoError(t, json.Unmarshal(raw, &w))
	require.Len(t, w.Events, 1, "left for wait(), which returns it at once")
	assert.Equal(t, []string{"db", "api"}, w.Events[0].Reply.Components)
	assert.Empty(t, s.Pending(ctx), "taken")
}

// A waiting agent is woken by each line that concerns it the moment it
// comes, and by no other: TASKS, a REVIEW (auditors answer it), an
// operator's ASSIGN (foreman's ACK naming it), FIX, UNBLOCKED, MERGED of
// what it holds, a mention; not another agent's FIX or UNBLOCKED, nor a
// MERGED of what it never held.
func TestWaitWakesOnLinesForTheAgent(t *testing.T) {
	s, fm, other := standIn(t, patience)
	me := s.ID()
	waiting := func() <-chan []Event {
		out := make(chan []Event, 1)
		go func() {
			evs, err := s.Wait(context.Background(), patience)
			assert.NoError(t, err)
			out <- evs
		}()
		require.Eventually(t, func() bool {
			n := 0
			s.do(context.Background(), func() { n = len(s.waiters) })
			return n == 1
		}, patience, time.Millisecond, "the agent waits")
		return out
	}
	texts := func(evs []Event) []string {
		var out []string
		for _, e := range evs {
			out = append(out, e.Text)
		}
		return out
	}
	for _, c := range []struct {
		say  func()
		wake string
	}{
		{func() { fm.Say("TASKS db") }, "TASKS db"},
		{func() { fm.Say("REVIEW api @00000000000000bb bo/api") }, "REVIEW api @00000000000000bb bo/api"},
		{func() { fm.Say("ACK db " + me) }, "ACK db " + me}, // an operator's ASSIGN db
		{func() {
			fm.Say("FIX auth @00000000000000bb 1/3 not yours")
			fm.Say("FIX db " + me + " 1/3 add an index")
		}, "FIX db " + me + " 1/3 add an index"},
		{func() { fm.Say("WAIT db " + me + " auth") }, "WAIT db " + me + " auth"},
		{func() { fm.Say("UNBLOCKED api @00000000000000bb"); fm.Say("UNBLOCKED db " + me) }, "UNBLOCKED db " + me},
		{func() { fm.Say("MERGED auth"); fm.Say("MERGED db") }, "MERGED db"},
		{func() { other.Say("@ada the schema is in") }, "@ada the schema is in"},
	} {
		w := waiting()
		c.say()
		assert.Equal(t, []string{c.wake}, texts(<-w))
	}
}

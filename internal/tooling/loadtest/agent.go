package loadtest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/agentchat"
)

// simAgent is one simulated agent: a real AgentChat client with its own
// key, which claims one component and waits for the bot's ACK.
type simAgent struct {
	comp    string
	id      string
	bot     string
	client  *agentchat.Client
	started bool          // run was called: done will be closed
	done    chan struct{} // closed when the client's events end

	joined     chan struct{}
	heardTasks chan struct{}
	answered   chan struct{} // closed on the ACK, REJECT or ERROR for the claim
	echoed     chan struct{} // closed when the room echoed the claim back
	joinOnce   sync.Once
	tasksOnce  sync.Once
	answerOnce sync.Once
	echoOnce   sync.Once

	// Written by the event goroutine before echoed is closed.
	echoAt time.Time
	echoTS time.Time // the server's time on the claim (ms)

	// Written by the event goroutine before answered is closed.
	ackAt  time.Time
	ackTS  time.Time // the server's time on the bot's answer (ms)
	answer string    // the bot's line that answered the claim

	// Written by the scheduler, read after it has finished.
	sentAt time.Time

	rateLimited  atomic.Int64
	disconnects  atomic.Int64
	mu           sync.Mutex
	serverErrors []string
	fatal        error
}

func newSimAgent(id *agentchat.Identity, comp, bot string, cfg agentchat.Config) (*simAgent, error) {
	cfg.Identity = id
	cfg.Logger = zerolog.Nop()
	return &simAgent{
		comp: comp, id: id.AgentID(), bot: bot,
		client:     agentchat.New(cfg),
		done:       make(chan struct{}),
		joined:     make(chan struct{}),
		heardTasks: make(chan struct{}),
		answered:   make(chan struct{}),
		echoed:     make(chan struct{}),
	}, nil
}

// run connects the agent and reads its events until ctx ends.
func (a *simAgent) run(ctx context.Context) {
	a.started = true
	go func() {
		if err := a.client.Run(ctx); err != nil {
			a.setFatal(err)
		}
	}()
	go func() {
		defer close(a.done)
		for ev := range a.client.Events() {
			a.handle(ev)
		}
	}()
}

func (a *simAgent) handle(ev agentchat.Event) {
	switch ev := ev.(type) {
	case agentchat.Joined:
		a.joinOnce.Do(func() { close(a.joined) })
	case agentchat.Message:
		if ev.From == a.bot && !ev.Replay {
			a.read(ev.Body(), ev.TS)
		}
	case agentchat.Delivered:
		// The claim's own round trip through the room, with no bot in it:
		// the part of CLAIM-to-ACK that is the room's.
		a.echoOnce.Do(func() {
			a.echoAt, a.echoTS = time.Now(), ev.TS
			close(a.echoed)
		})
	case agentchat.ServerError:
		// WELCOME's lurk fields are only advice; a refused message is not.
		if ev.Code == agentchat.CodeLurkMode {
			a.setFatal(fmt.Errorf("the server lets new identity %s only listen (lurk mode); run it with lurking off (LURK_DISABLED=true, or foreman serve)", a.id))
		}
		if ev.Code == agentchat.CodeRateLimited {
			a.rateLimited.Add(1)
		}
		a.mu.Lock()
		a.serverErrors = append(a.serverErrors, ev.Code+" "+ev.Message)
		a.mu.Unlock()
	case agentchat.Disconnected:
		a.disconnects.Add(1)
	}
}

// read looks in one of the bot's messages for TASKS and for the answer to
// this agent's claim. Most messages answer other agents, so a message that
// does not name this agent is passed over without splitting it.
func (a *simAgent) read(content string, ts time.Time) {
	at := time.Now()
	if strings.HasPrefix(content, "TASKS ") || strings.Contains(content, "\nTASKS ") {
		a.tasksOnce.Do(func() { close(a.heardTasks) })
	}
	if !strings.Contains(content, a.id) {
		return
	}
	for line := range strings.Lines(content) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch {
		case f[0] == "ACK" && len(f) >= 3 && f[1] == a.comp && f[2] == a.id,
			f[0] == "REJECT" && len(f) >= 3 && f[1] == a.comp && f[2] == a.id,
			f[0] == "ERROR" && f[1] == a.id:
			a.answerOnce.Do(func() {
				a.ackAt, a.ackTS, a.answer = at, ts, strings.TrimSpace(line)
				close(a.answered)
			})
		}
	}
}

// claim sends the claim, noting the time just before.
func (a *simAgent) claim(seq uint64) {
	a.sentAt = time.Now()
	a.client.Send(agentchat.Line{Seq: seq, Text: "CLAIM " + a.comp})
}

func (a *simAgent) setFatal(err error) {
	a.mu.Lock()
	if a.fatal == nil {
		a.fatal = err
	}
	a.mu.Unlock()
}

func (a *simAgent) err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.fatal
}

func (a *simAgent) errors() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.serverErrors...)
}

// acked reports whether the claim was answered with an ACK.
func (a *simAgent) acked() bool { return strings.HasPrefix(a.answer, "ACK ") }

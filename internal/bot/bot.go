// Package bot is foreman's live shell: it joins the room, hands every
// message and every due timer to the engine through the journal, sends the
// replies, and keeps working through restarts, reconnects and signals.
package bot

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/journal"
	"github.com/agentforeman/foreman/protocol"
)

// Options configure a Bot. Only Config is required.
type Options struct {
	Config   *config.Config
	Logger   zerolog.Logger
	Identity *agentchat.Identity // default: load or create Config.Server.Identity
	Now      func() time.Time    // default: time.Now
	// Reload delivers SIGHUP: the components are read again from the
	// config (or spec) and applied, with the cycle check.
	Reload        <-chan struct{}
	ReloadConfig  func() (*config.Config, error) // how to read the config again
	ShutdownGrace time.Duration                  // how long to wait for queued replies on shutdown (default 5s)
	SnapshotEvery int                            // events between journal snapshots (default 1000)
	// Observe, if set, is called in the bot's goroutine with each line
	// heard and the lines said (for metrics and the board).
	Observe func(at time.Time, heard *coordinator.Message, said []string)
	// Handled, if set, is called after each batch of events is handled,
	// journaled and sent, with how long that took.
	Handled func(d time.Duration, events int)
}

// Bot is foreman in a room.
type Bot struct {
	opts   Options
	cfg    *config.Config
	log    zerolog.Logger
	id     *agentchat.Identity
	j      *journal.Journal
	core   *core
	client *agentchat.Client

	joined    bool
	restarted bool // the build began before this process: the first join catches up
	caughtUp  bool

	health  atomic.Pointer[Health]
	views   chan chan coordinator.View
	stopped chan struct{} // closed when Run has returned: the engine is then idle
}

// Health is what /healthz reports.
type Health struct {
	Connected  bool
	Joined     bool
	JournalErr string // the last journal failure, "" if none
	LastEvent  time.Time
	Queued     int
}

const (
	aliveEvery = 2 * time.Second
	batchMax   = 256 // room events handled per journal commit, at most
)

// New opens the journal, recovers the build from it, and prepares the room
// connection. Run connects.
func New(opts Options) (*Bot, error) {
	cfg := opts.Config
	if err := cfg.RequireBuild(); err != nil {
		return nil, err
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = 5 * time.Second
	}
	if opts.SnapshotEvery <= 0 {
		opts.SnapshotEvery = 1000
	}
	b := &Bot{opts: opts, cfg: cfg, log: opts.Logger, id: opts.Identity, views: make(chan chan coordinator.View),
		stopped: make(chan struct{})}
	b.health.Store(&Health{})
	if b.id == nil {
		id, created, err := agentchat.LoadOrCreateIdentity(cfg.Server.Identity, cfg.Server.Name)
		if err != nil {
			return nil, fmt.Errorf("server.identity: %w", err)
		}
		if created {
			b.log.Info().Str("file", cfg.Server.Identity).Str("agent", id.AgentID()).
				Msg("created a new identity; on a stock AgentChat server a new key may only listen for its first hour")
		}
		b.id = id
	}
	if cfg.Journal != "" {
		j, err := journal.Open(cfg.Journal)
		if err != nil {
			return nil, err
		}
		b.j = j
	}
	engCfg := cfg.Engine(b.id.AgentID())
	c, err := openCore(engCfg, b.j, opts.SnapshotEvery)
	if err != nil {
		b.closeJournal()
		return nil, err
	}
	b.core = c
	c.observe = opts.Observe
	b.restarted = c.started()
	if b.restarted {
		at, _ := c.eng.StartedAt()
		b.log.Info().Str("journal", cfg.Journal).Time("build_started", at).Int("unconfirmed_replies", len(c.pending)).
			Msg("resuming the build from the journal")
	}
	if cfg.Record != "" {
		rec, err := openRecorder(cfg.Record, engCfg, func() time.Time { at, _ := c.eng.StartedAt(); return at })
		if err != nil {
			b.closeJournal()
			return nil, fmt.Errorf("record.path: %w", err)
		}
		c.rec = rec
	}
	b.client = agentchat.New(agentchat.Config{
		URL: cfg.Server.URL, Channel: cfg.Server.Channel, Name: cfg.Server.Name, Identity: b.id,
		RateLimit: roomRate(cfg.Server.RateLimit), MaxMessage: cfg.Server.MaxMessage, CreateChannel: true,
		FloodLimit: cfg.Server.FloodLimit,
		Logger:     b.log.With().Str("part", "room").Logger(),
	})
	return b, nil
}

// roomRate maps the configuration's rate limit (0: the room has none) to
// the client's (negative: none; zero would mean its default).
func roomRate(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// AgentID is foreman's sender id in the room.
func (b *Bot) AgentID() string { return b.id.AgentID() }

// Health returns the latest health report; safe from any goroutine.
func (b *Bot) Health() Health { return *b.health.Load() }

// View asks the bot's goroutine for the build as it stands; safe from any
// goroutine. After Run has returned it reads the final state directly,
// since nothing else touches the engine then. It fails when ctx ends first.
func (b *Bot) View(ctx context.Context) (coordinator.View, error) {
	reply := make(chan coordinator.View, 1)
	select {
	case b.views <- reply:
		return <-reply, nil
	case <-b.stopped:
		return b.core.eng.View(), nil
	case <-ctx.Done():
		return coordinator.View{}, ctx.Err()
	}
}

// RoomStats are the room connection's counters; safe from any goroutine.
func (b *Bot) RoomStats() agentchat.Stats { return b.client.Stats() }

// Run joins the room and coordinates until ctx is done, then shuts down
// gracefully: the journal is flushed and queued replies get a few seconds
// to go out. It returns an error the room or the journal made fatal.
func (b *Bot) Run(ctx context.Context) error {
	defer close(b.stopped)
	defer b.close()
	clientCtx, stopClient := context.WithCancel(context.Background())
	defer stopClient()
	runErr := make(chan error, 1)
	go func() { runErr <- b.client.Run(clientCtx) }()

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	alive := time.NewTicker(aliveEvery)
	defer alive.Stop()
	events := b.client.Events()
	b.log.Info().Str("url", b.cfg.Server.URL).Str("channel", b.cfg.Server.Channel).Str("agent", b.AgentID()).
		Msg("connecting to the room")
	for {
		b.armTimer(timer)
		var err error
		var began time.Time
		handled := 0
		select {
		case <-ctx.Done():
			return b.shutdown(events, runErr, stopClient)
		case err = <-runErr:
			if err == nil {
				err = errors.New("the room connection ended")
			}
			return err
		case ev, ok := <-events:
			if !ok {
				return <-runErr
			}
			began = time.Now()
			err, handled = b.handle(ev), 1
		drain: // take what else is waiting, to journal it in one commit
			for ; handled < batchMax && err == nil; handled++ {
				select {
				case ev, ok = <-events:
					if !ok {
						break drain
					}
					err = b.handle(ev)
				default:
					break drain
				}
			}
		case <-timer.C:
			if b.joined {
				b.core.applyDue(b.now())
			}
		case <-alive.C:
			if b.joined && b.j != nil {
				if err := b.j.SaveAlive(b.now()); err != nil {
					b.journalFailed(err)
				}
				if err := b.core.saveOutbox(); err != nil {
					b.journalFailed(err)
				}
			}
		case <-b.opts.Reload:
			b.reload()
		case reply := <-b.views:
			reply <- b.core.eng.View()
			continue
		}
		if err == nil {
			err = b.flush()
		}
		if err != nil {
			return err
		}
		if handled > 0 && b.opts.Handled != nil {
			b.opts.Handled(time.Since(began), handled)
		}
	}
}

// now is the wall clock at the room's resolution.
func (b *Bot) now() time.Time { return time.UnixMilli(b.opts.Now().UnixMilli()).UTC() }

// armTimer sets the timer for the engine's next deadline. While foreman is
// out of the room no timer runs: that time is a pause (contract section 5).
func (b *Bot) armTimer(t *time.Timer) {
	t.Stop()
	if !b.joined {
		return
	}
	if d, ok := b.core.eng.NextDeadline(); ok {
		t.Reset(max(0, d.Sub(b.now())))
	}
}

// handle takes one event from the room.
func (b *Bot) handle(ev agentchat.Event) error {
	switch ev := ev.(type) {
	case agentchat.Connected:
		b.setHealth(func(h *Health) { h.Connected = true })
		l := b.log.Info().Str("agent", ev.AgentID).Bool("verified", ev.Verified)
		if ev.Reconnect {
			l.Msg("reconnected to the room")
		} else {
			l.Msg("connected to the room")
		}
		if ev.Lurk && !ev.LurkUntil.IsZero() {
			b.log.Warn().Time("until", ev.LurkUntil).
				Msg("the server lets this new identity only listen until then; replies wait and go out when it unlocks")
		}
	case agentchat.Joined:
		return b.joinedRoom(ev)
	case agentchat.Message:
		if ev.Self || ev.Notice || !b.joined {
			return nil
		}
		b.core.applyDue(ev.TS)
		b.core.apply(messageEvent(ev))
	case agentchat.Delivered:
		b.core.confirm(ev.Seqs, ev.TS)
	case agentchat.Disconnected:
		b.setHealth(func(h *Health) { h.Connected, h.Joined = false, false })
		b.log.Warn().Err(ev.Err).Msg("lost the room; reconnecting (deadlines stop until foreman is back)")
		if b.joined {
			now := b.now()
			b.core.applyDue(now)
			b.core.apply(&journal.Event{Kind: journal.Advance, At: now.UnixMilli()})
		}
		b.joined = false
	case agentchat.ServerError:
		b.log.Warn().Str("code", ev.Code).Str("server_says", ev.Message).Msg(ev.Advice)
	case agentchat.AgentJoined:
		b.log.Debug().Str("agent", ev.Agent.ID).Str("name", ev.Agent.Name).Msg("joined the room")
	case agentchat.AgentLeft:
		b.log.Debug().Str("agent", ev.Agent.ID).Str("name", ev.Agent.Name).Msg("left the room")
	}
	return nil
}

func messageEvent(m agentchat.Message) *journal.Event {
	return &journal.Event{Kind: journal.Message, At: m.TS.UnixMilli(), ID: m.ID, From: m.From,
		Verified: m.Verified, Content: m.Content}
}

// joinedRoom starts the build on the first join, and on a later one (after
// a restart or a reconnect) treats the time away as a pause and handles what
// the room said meanwhile, from its replayed history.
func (b *Bot) joinedRoom(ev agentchat.Joined) error {
	now := b.now()
	b.setHealth(func(h *Health) { h.Joined = true })
	b.log.Info().Str("channel", ev.Channel).Int("agents", len(ev.Agents)).Bool("created", ev.Created).Msg("joined the channel")
	if !b.core.started() {
		b.joined = true
		if n := len(ev.History); n > 0 {
			b.log.Info().Int("messages", n).Msg("ignoring what the room said before the build started")
		}
		b.core.apply(&journal.Event{Kind: journal.Start, At: now.UnixMilli()})
		b.log.Info().Str("build", b.cfg.Build.Name).Int("components", len(b.cfg.Build.Components)).Msg("started the build")
		return nil
	}
	if b.restarted && !b.caughtUp {
		if err := b.resumeReplies(ev.History); err != nil {
			return err
		}
		if alive, err := b.j.LoadAlive(); err == nil && alive.After(b.core.eng.Now()) && alive.Before(now) {
			b.core.applyDue(alive)
			b.core.apply(&journal.Event{Kind: journal.Advance, At: alive.UnixMilli()})
		}
	}
	away := now.Sub(b.core.eng.Now())
	b.core.apply(&journal.Event{Kind: journal.Recover, At: now.UnixMilli()})
	b.joined = true
	missed := b.missed(ev.History)
	for _, m := range missed {
		b.core.apply(messageEvent(m))
	}
	b.caughtUp = true
	b.log.Info().Dur("away", away.Round(time.Millisecond)).Int("missed_messages", len(missed)).
		Msg("back in the room: deadlines moved by the time away; caught up on what was missed")
	return nil
}

// resumeReplies, after a restart, drops from the unconfirmed replies those
// the room's history shows were sent, and queues the rest again.
func (b *Bot) resumeReplies(history []agentchat.Message) error {
	found, err := b.core.matchOwnHistory(history)
	if err != nil {
		b.journalFailed(err)
	}
	pending := b.core.pendingLines()
	if found > 0 || len(pending) > 0 {
		b.log.Info().Int("already_in_room", found).Int("sending_again", len(pending)).
			Msg("replies from before the restart")
	}
	b.client.Send(pending...)
	return nil
}

// missed returns the history messages after the last one handled. If that
// one is no longer in the history (the room keeps only its last few), it
// returns those not older than it, and warns that some may be lost.
func (b *Bot) missed(history []agentchat.Message) []agentchat.Message {
	var msgs []agentchat.Message
	for _, m := range history {
		if !m.Self && !m.Notice {
			msgs = append(msgs, m)
		}
	}
	if b.core.lastMsg == "" {
		return msgs
	}
	for i, m := range msgs {
		if m.ID == b.core.lastMsg {
			return msgs[i+1:]
		}
	}
	var out []agentchat.Message
	for _, m := range msgs {
		if !m.TS.Before(b.core.lastMsgT) {
			out = append(out, m)
		}
	}
	if len(out) == len(msgs) && len(msgs) > 0 {
		b.log.Warn().Int("history", len(history)).
			Msg("the room's history no longer reaches the last message foreman handled; lines sent before it may be lost")
	}
	return out
}

// flush commits what was applied and sends the replies.
func (b *Bot) flush() error {
	lines, err := b.core.commit()
	if err != nil {
		b.journalFailed(err)
		return err
	}
	if len(lines) > 0 {
		b.client.Send(lines...)
		for _, l := range lines {
			b.logSaid(l.Text)
		}
	}
	b.setHealth(func(h *Health) {
		h.LastEvent = b.core.eng.Now()
		h.Queued = b.client.Stats().Queued
	})
	return nil
}

// reload reads the components again and applies them.
func (b *Bot) reload() {
	if b.opts.ReloadConfig == nil {
		return
	}
	cfg, err := b.opts.ReloadConfig()
	if err == nil {
		err = cfg.RequireBuild()
	}
	if err != nil {
		b.log.Error().Err(err).Msg("reload refused: the config has an error; the build goes on unchanged")
		return
	}
	b.log.Info().Int("components", len(cfg.Build.Components)).Msg("reloading the components")
	b.core.apply(&journal.Event{Kind: journal.Reload, At: b.now().UnixMilli(), Components: cfg.Build.Components})
}

// shutdown stops handling the room, commits the journal, and gives queued
// replies a grace period to reach the room.
func (b *Bot) shutdown(events <-chan agentchat.Event, runErr <-chan error, stopClient func()) error {
	err := b.flush()
	queued := b.client.Stats().Queued
	b.log.Info().Int("queued_replies", queued).Msg("shutting down: journal flushed, sending what is queued")
	deadline := time.After(b.opts.ShutdownGrace)
	for b.client.Stats().Queued > 0 {
		select {
		case ev, ok := <-events:
			if !ok {
				return err
			}
			if d, isDelivery := ev.(agentchat.Delivered); isDelivery {
				b.core.confirm(d.Seqs, d.TS)
			}
		case <-deadline:
			b.log.Warn().Int("queued_replies", b.client.Stats().Queued).Msg("grace period over; the next start sends what is left")
			stopClient()
			return err
		case <-runErr:
			return err
		}
	}
	stopClient()
	return err
}

func (b *Bot) close() {
	if b.core != nil {
		if err := b.core.saveOutbox(); err != nil {
			b.log.Error().Err(err).Msg("could not save which replies the room confirmed; the next start checks the room's history")
		}
		if err := b.core.snapshot(); err != nil {
			b.log.Error().Err(err).Msg("could not save the final snapshot; the next start replays the journal instead")
		}
		if b.core.rec != nil {
			if err := b.core.rec.close(); err != nil {
				b.log.Error().Err(err).Msg("could not finish the recording")
			}
		}
	}
	b.closeJournal()
}

func (b *Bot) closeJournal() {
	if b.j != nil {
		b.j.Close()
		b.j = nil
	}
}

func (b *Bot) journalFailed(err error) {
	b.log.Error().Err(err).Msg("journal write failed")
	b.setHealth(func(h *Health) { h.JournalErr = err.Error() })
}

func (b *Bot) setHealth(f func(*Health)) {
	h := *b.health.Load()
	f(&h)
	b.health.Store(&h)
}

// logSaid logs a reply in words.
func (b *Bot) logSaid(line string) {
	verb := protocol.ReplyVerb(line)
	switch verb {
	case protocol.ReplyEscalate:
		b.log.Warn().Str("said", line).Msg("a human must decide")
	case protocol.ReplyError:
		b.log.Info().Str("said", line).Msg("answered a malformed line")
	case protocol.ReplyStatus:
		b.log.Debug().Str("said", line).Msg("status")
	default:
		b.log.Info().Str("said", line).Msg(describe[verb])
	}
}

var describe = map[string]string{
	protocol.ReplyTasks:     "announced what can be claimed",
	protocol.ReplyAck:       "assigned a component",
	protocol.ReplyReject:    "refused a line",
	protocol.ReplyTimeout:   "a builder missed its check-ins; the component is free again",
	protocol.ReplyRetry:     "a builder used all its audit attempts; the component goes to another",
	protocol.ReplyReview:    "sent a component to audit",
	protocol.ReplyFix:       "sent a component back to its builder",
	protocol.ReplyWait:      "a component waits on another",
	protocol.ReplyUnblocked: "a component may go on",
	protocol.ReplyMerged:    "merged a component",
	protocol.ReplyComplete:  "the build is complete",
	protocol.ReplyOK:        "carried out an operator command",
}

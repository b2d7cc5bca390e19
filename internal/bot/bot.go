// Package bot is foreman's live shell: it joins the room, hands every
// message to the engine through the node, persists what the node hands out
// before sending a word of it, and keeps working through restarts,
// reconnects, stalls and signals.
package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/journal"
	"github.com/agentforeman/foreman/internal/node"
	"github.com/agentforeman/foreman/internal/recovery"
	"github.com/agentforeman/foreman/protocol"
)

// Timing of the shell. Deadlines themselves are the engine's, in room time.
const (
	// aliveEvery is how often foreman notes it is running (when the mark
	// moved: a synced 16-byte write), so that a restart can tell the time
	// it was away from time it merely idled.
	aliveEvery = 1 * time.Second
	// heartbeatEvery: a room quiet this long is asked its clock, so that
	// the alive mark (the room's time, the last time foreman surely was in
	// the room) follows a quiet stretch: after a stop, even a kill -9 or a
	// power loss, the time counted as away is off by at most this, twice
	// aliveEvery and the room's answer, 4 s and a round trip (contract
	// section 3). One frame every 2 s of the room's flood limit (60 in
	// 10 s).
	heartbeatEvery = 2 * time.Second
	// minPingGap spaces the clock readings a due deadline asks for: the
	// room counts them against its frame-flood limit.
	minPingGap = 200 * time.Millisecond
	// defaultGrace is how long queued replies may take to go out on
	// shutdown.
	defaultGrace = 5 * time.Second
	// refusalGrace is how long foreman waits for the room to take its word
	// that it refuses to coordinate.
	refusalGrace = 3 * time.Second
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
	SnapshotEvery int                            // entries between journal snapshots (default node.DefaultSnapshotEvery)
	// NewBuild starts a build even when the room shows that this identity
	// coordinates another there (whose journal this one is not).
	NewBuild bool
	// Observe, if set, is called in the bot's goroutine with every event the
	// engine handles and what it said (for metrics and the board).
	Observe func(ev *coordinator.Event, said []coordinator.Reply)
	// Named, if set, is told each sender's display name as the room gives it.
	Named func(id, name string)
	// Members, if set, is told who is in the channel: foreman's own id
	// (agentchat.Connected), the member list at each join (Joined), each
	// join and leave (AgentJoined, AgentLeft), and losing the room
	// (Disconnected). It runs in the bot's goroutine and must not wait.
	Members func(ev agentchat.Event)
	// Handled, if set, is called after each batch of events is handled,
	// journaled and sent, with how long that took.
	Handled func(d time.Duration, events int)
	// Storage, if set, is the build's log in place of the journal at
	// journal.path (the cluster's, in JetStream), named StorageName in
	// refusals and logs. The bot closes it.
	Storage     node.Storage
	StorageName string
	// Gate, if set, is asked right before each message goes to the room:
	// false holds it back. A cluster leader's gate closes once its lease
	// may lapse, so that a deposed leader never says a line.
	Gate func() bool

	// aliveEvery and heartbeatEvery are the constants of those names,
	// shorter in tests.
	aliveEvery, heartbeatEvery time.Duration
}

// Bot is foreman in a room.
type Bot struct {
	opts      Options
	cfg       *config.Config
	log       zerolog.Logger
	recording *observer // the recording's boundary (observe.go)
	id        *agentchat.Identity
	st        node.Storage
	j         *journal.Journal  // nil without a journal
	sess      *recovery.Session // joins, restarts and catch-up
	node      *node.Node        // the session's
	rec       *recorder
	client    *agentchat.Client

	tag      string
	room     roomClock
	lastPing time.Time
	// savedAlive is the alive mark last saved: an unchanged one is not
	// written again.
	savedAlive time.Time
	lastHeard  time.Time           // when, by our clock, the room last sent a timestamp
	history    []agentchat.Message // the room's replay at the latest join
	operators  []string            // as last configured: who is told of a refused reload

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
	// Commits and Entries count the journal's commits (one write and one
	// fdatasync each) and the entries they held: how well it batches.
	Commits, Entries int64
}

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
	if opts.aliveEvery <= 0 {
		opts.aliveEvery = aliveEvery
	}
	if opts.heartbeatEvery <= 0 {
		opts.heartbeatEvery = heartbeatEvery
	}
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = defaultGrace
	}
	b := &Bot{opts: opts, cfg: cfg, log: opts.Logger, id: opts.Identity, views: make(chan chan coordinator.View),
		stopped: make(chan struct{}), operators: cfg.Roles.Operators}
	b.health.Store(&Health{})
	b.guardObservers()
	if b.id == nil {
		id, created, err := agentchat.LoadOrCreateIdentity(cfg.Server.Identity, cfg.Server.Name)
		if err != nil {
			return nil, fmt.Errorf("server.identity: %w", err)
		}
		if created {
			b.log.Info().Str("file", cfg.Server.Identity).Str("agent", id.AgentID()).
				Msg("created a new identity; a stock AgentChat server may tell a new key it can only listen for its first hour")
		}
		b.id = id
	}
	switch {
	case opts.Storage != nil:
		b.st = opts.Storage
	case cfg.Journal != "":
		j, err := journal.Open(cfg.Journal, journal.Options{Snapshotted: b.snapshotted})
		if err != nil {
			return nil, fmt.Errorf("journal.path: %w", err)
		}
		b.j, b.st = j, j
	default:
		b.st = node.NewMemoryStorage()
	}
	engCfg := cfg.Engine(b.id.AgentID())
	sess, err := recovery.Open(recovery.Config{
		Node:  node.Config{Engine: engCfg, Storage: b.st, SnapshotEvery: opts.SnapshotEvery, Observe: b.observe},
		Build: cfg.Build.Name, History: cfg.Server.History, NewBuild: opts.NewBuild,
		JournalName: b.journalName(), Self: b.id.AgentID(),
	})
	if err != nil {
		b.st.Close()
		return nil, err
	}
	b.sess, b.node = sess, sess.Node()
	n := b.node
	if sess.Restarted() {
		b.setTag()
	}
	if cfg.Record != "" {
		rec, err := openRecorder(cfg.Record, engCfg, func() time.Time { at, _ := n.Engine().StartedAt(); return at })
		if err != nil {
			b.st.Close()
			return nil, fmt.Errorf("record.path: %w", err)
		}
		b.rec = rec
		rec.last = n.Engine().Now()
	}
	b.client = agentchat.New(agentchat.Config{
		URL: cfg.Server.URL, Channel: cfg.Server.Channel, Name: cfg.Server.Name, Identity: b.id,
		RateLimit: roomRate(cfg.Server.RateLimit), MaxMessage: cfg.Server.MaxMessage, CreateChannel: true,
		FloodLimit: cfg.Server.FloodLimit, Tag: b.tag, Gate: opts.Gate,
		Logger: b.log.With().Str("part", "room").Logger(),
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

// setTag names this run of the build on every message foreman sends (the
// stamp), so that it knows its own messages again however the room
// rewrites them, and tells another build's from this one's.
func (b *Bot) setTag() {
	b.tag = b.sess.Tag()
	if b.client != nil {
		b.client.SetTag(b.tag)
	}
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
		return b.node.Engine().View(), nil
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
	for _, w := range b.cfg.Build.Warnings {
		b.log.Warn().Msg(w)
	}
	if b.sess.Restarted() {
		// Said when it runs, not when it opens: a foreman up that then
		// cannot serve its room resumes nothing.
		at, _ := b.node.Engine().StartedAt()
		b.log.Info().Str("journal", b.journalName()).Time("build_started", at).Int("unconfirmed_replies", len(b.node.Unconfirmed())).
			Msg("resuming the build from the journal")
	}
	clientCtx, stopClient := context.WithCancel(context.Background())
	defer stopClient()
	runErr := make(chan error, 1)
	go func() { runErr <- b.client.Run(clientCtx) }()

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	alive := time.NewTicker(b.opts.aliveEvery)
	defer alive.Stop()
	batches := b.client.Batches()
	b.log.Info().Str("url", b.cfg.Server.URL).Str("channel", b.cfg.Server.Channel).Str("agent", b.AgentID()).
		Msg("connecting to the room")
	for {
		b.armTimer(timer)
		var err error
		var began time.Time
		handled := 0
		select {
		case <-ctx.Done():
			return b.shutdown(batches, runErr, stopClient)
		case err = <-runErr:
			if err == nil {
				err = errors.New("the room connection ended")
			}
			return err
		case evs, ok := <-batches:
			if !ok {
				return <-runErr
			}
			began = time.Now()
			for _, ev := range evs {
				if err = b.handle(ev); err != nil {
					break
				}
			}
			handled = len(evs)
		case <-timer.C:
			// A deadline is due by our clock. The room's decides: a line
			// that checked in may still be on its way (foreman was
			// stalled, or the room is slow), so foreman reads the room's
			// clock, after everything the room sent before it.
			b.lastPing = time.Now()
			b.client.Ping()
		case <-alive.C:
			if b.sess.InRoom() && time.Since(b.lastHeard) >= b.opts.heartbeatEvery && time.Since(b.lastPing) >= b.opts.heartbeatEvery {
				b.lastPing = time.Now()
				b.client.Ping()
			}
			b.saveAlive()
		case <-b.opts.Reload:
			b.reload()
		case reply := <-b.views:
			reply <- b.node.Engine().View()
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

// armTimer sets the timer for when, by our clock, the room's clock reaches
// the engine's next deadline. Out of the room no deadline runs: that time
// is a pause (contract section 5).
func (b *Bot) armTimer(t *time.Timer) {
	t.Stop()
	if !b.sess.InRoom() {
		return
	}
	d, ok := b.node.Engine().NextDeadline()
	if !ok {
		return
	}
	now := time.Now()
	at := b.room.localFor(d)
	if next := b.lastPing.Add(minPingGap); at.Before(next) {
		at = next
	}
	t.Reset(max(0, at.Sub(now)))
}

// handle takes one event from the room.
func (b *Bot) handle(ev agentchat.Event) error {
	if b.opts.Members != nil {
		switch ev.(type) {
		case agentchat.Connected, agentchat.Joined, agentchat.AgentJoined, agentchat.AgentLeft, agentchat.Disconnected:
			b.opts.Members(ev)
		}
	}
	switch ev := ev.(type) {
	case agentchat.Connected:
		b.setHealth(func(h *Health) { h.Connected = true })
		l := b.log.Info().Str("agent", ev.AgentID).Bool("verified", ev.Verified)
		if ev.Reconnect {
			l.Msg("reconnected to the room")
		} else {
			l.Msg("connected to the room")
		}
	case agentchat.Joined:
		b.named(ev.Agents...)
		b.history = ev.History
		return b.joinedRoom(ev)
	case agentchat.Message:
		return b.heard(ev)
	case agentchat.Delivered:
		b.saw(ev.TS)
		b.delivered(ev)
	case agentchat.Clock:
		b.saw(ev.TS)
		b.sess.Clock(ev.TS)
	case agentchat.Disconnected:
		b.setHealth(func(h *Health) { h.Connected, h.Joined = false, false })
		b.log.Warn().Err(ev.Err).Msg("lost the room; reconnecting (deadlines stop until foreman is back)")
		b.sess.Disconnected()
	case agentchat.ServerError:
		if ev.Code == agentchat.CodeLurkMode {
			b.sess.Muted()
		}
		msg := ev.Advice
		if msg == "" {
			msg = "the chat server reported an error"
		}
		b.log.Warn().Str("code", ev.Code).Str("server_says", ev.Message).Msg(msg)
	case agentchat.AgentJoined:
		b.named(ev.Agent)
		b.log.Debug().Str("agent", ev.Agent.ID).Str("name", ev.Agent.Name).Msg("joined the room")
		b.sess.Members(ev.Agent) // an operator may hand it work before it speaks
	case agentchat.AgentLeft:
		b.log.Debug().Str("agent", ev.Agent.ID).Str("name", ev.Agent.Name).Msg("left the room")
	}
	return nil
}

// heard handles a message from the room.
func (b *Bot) heard(m agentchat.Message) error {
	b.saw(m.TS)
	b.sess.Saw(m.TS)
	if m.Self {
		return b.ownMessage(m)
	}
	if m.Notice || !b.sess.InRoom() {
		return nil
	}
	if b.opts.Named != nil && m.FromName != "" {
		b.opts.Named(m.From, m.FromName)
	}
	return b.sess.Hear(m)
}

// delivered records that the room has lines, and says so in the log: until
// then they were only queued.
func (b *Bot) delivered(d agentchat.Delivered) {
	for _, s := range d.Seqs {
		if l, ok := b.node.Line(s); ok {
			b.logSaid(l.Text)
		}
	}
	b.sess.Delivered(d)
}

func (b *Bot) named(agents ...agentchat.Agent) {
	if b.opts.Named == nil {
		return
	}
	for _, a := range agents {
		if a.Name != "" {
			b.opts.Named(a.ID, a.Name)
		}
	}
}

// flush persists what the node did and then sends what it said: never the
// other way round, or a crash in between would lose what the room heard.
func (b *Bot) flush() error {
	rd, err := b.sess.Commit()
	if err != nil {
		err = fmt.Errorf("journal: %w", err)
		b.journalFailed(err)
		return err
	}
	if b.rec != nil {
		if err := b.rec.flush(); err != nil {
			b.log.Error().Err(err).Msg("could not write the recording")
		}
	}
	if len(rd.Messages) > 0 {
		lines := make([]agentchat.Line, len(rd.Messages))
		for i, l := range rd.Messages {
			lines[i] = wireLine(l)
			b.log.Debug().Str("line", l.Text).Msg("queued")
		}
		b.client.Send(lines...)
	}
	if rd.Snapshot != nil {
		if err := b.st.SaveSnapshot(rd.Snapshot); err != nil {
			b.log.Error().Err(err).Msg("could not save a snapshot; the journal still holds everything")
		}
	}
	b.setHealth(func(h *Health) {
		h.LastEvent = b.node.Engine().Now()
		h.Queued = b.client.Stats().Queued
		if (b.j != nil || b.opts.Storage != nil) && len(rd.Entries) > 0 {
			h.Commits++
			h.Entries += int64(len(rd.Entries))
		}
	})
	return nil
}

// saidBefore reports whether the room's replay at the latest join holds
// line from this identity: a refusal said by an earlier attempt is not
// said again.
func (b *Bot) saidBefore(line string) bool {
	for _, m := range b.history {
		if !m.Self || m.Notice {
			continue
		}
		for l := range protocol.Lines(m.Body()) {
			if strings.TrimSpace(l) == line {
				return true
			}
		}
	}
	return false
}

func wireLine(l node.Line) agentchat.Line {
	return agentchat.Line{Seq: l.Seq, Text: l.Text, Group: l.Group, Urgent: l.Urgent, Resent: l.Resent}
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
		b.client.Send(agentchat.Line{Text: reloadRefused(err, b.operators), Urgent: true, Plain: true})
		return
	}
	if !b.node.Started() {
		b.log.Warn().Msg("reload ignored: the build has not started")
		return
	}
	b.operators = cfg.Roles.Operators
	applied := b.sess.Reload(b.room.now(), cfg.Build.Components, cfg.Roles)
	// components is the live build's count, ADDed ones included; the
	// config's own list is only what the reload read.
	l := b.log.Info().Int("components", b.node.Engine().Size()).Int("config_components", len(cfg.Build.Components)).
		Int("operators", len(cfg.Roles.Operators))
	if !applied {
		l.Msg("reload read; foreman is not in the room: it applies when foreman is back")
		return
	}
	l.Msg("reloaded the components and the roles")
}

// reloadRefused is what the room is told of a SIGHUP reload refused for
// an error in the config: its operators are the ones to fix it. It is a
// notice, not a reply of the engine's: nothing changed.
func reloadRefused(err error, operators []string) string {
	who := "fix the config"
	if len(operators) > 0 {
		who = strings.Join(operators, " ") + ": fix the config"
	}
	return protocol.Error(protocol.BuildSubject, fmt.Sprintf("reload refused, nothing changed: %v; %s, then send foreman SIGHUP again", err, who)).Text
}

func (b *Bot) saveAlive() {
	at := b.sess.AliveMark()
	if at.IsZero() || at.Equal(b.savedAlive) {
		return
	}
	if err := b.st.SaveAlive(at); err != nil {
		b.journalFailed(err)
		return
	}
	b.savedAlive = at
}

// shutdown stops handling the room, persists what is left, and gives
// queued replies a grace period to reach the room.
func (b *Bot) shutdown(batches <-chan []agentchat.Event, runErr <-chan error, stopClient func()) error {
	err := b.flush()
	queued := b.client.Stats().Queued
	b.log.Info().Int("queued_replies", queued).Msg("shutting down: journal flushed, sending what is queued")
	deadline := time.After(b.opts.ShutdownGrace)
	// A closed gate (a lease that may lapse) holds every line back: waiting
	// for them would only delay the hand-over.
	var gateCheck <-chan time.Time
	if b.opts.Gate != nil {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		gateCheck = t.C
	}
	for b.client.Stats().Queued > 0 && err == nil && (b.opts.Gate == nil || b.opts.Gate()) {
		select {
		case <-gateCheck:
		case evs, ok := <-batches:
			if !ok {
				return err
			}
			for _, ev := range evs {
				if d, isDelivery := ev.(agentchat.Delivered); isDelivery {
					b.delivered(d)
				}
			}
			err = b.flush()
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

// Close releases what New opened (the journal, the recording) for a Bot
// that will not Run: foreman up opens each of its parts before it starts
// any, and lets them all go when one cannot start. Run closes them itself.
func (b *Bot) Close() { b.close() }

// close saves a last snapshot, so that the next start replays little, and
// closes the journal and the recording.
func (b *Bot) close() {
	if b.node.Started() {
		if rd := b.node.Ready(); len(rd.Entries) > 0 {
			if err := b.st.Append(rd.Entries); err != nil {
				b.log.Error().Err(err).Msg("could not journal the last entries")
			}
		}
		if err := b.st.SaveSnapshot(b.node.Snapshot()); err != nil {
			b.log.Error().Err(err).Msg("could not save the final snapshot; the next start replays the journal instead")
		}
	}
	if b.rec != nil {
		if err := b.rec.close(); err != nil {
			b.log.Error().Err(err).Msg("could not finish the recording")
		}
	}
	if err := b.st.Close(); err != nil {
		b.log.Error().Err(err).Msg("could not close the journal")
	}
}

func (b *Bot) snapshotted(index uint64, took time.Duration, err error) {
	if err != nil {
		b.log.Error().Err(err).Uint64("index", index).Msg("could not save a snapshot; the journal still holds everything")
		return
	}
	b.log.Debug().Uint64("index", index).Dur("took", took).Msg("snapshot saved")
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

package agentchat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

type phase int

const (
	phaseIdentify phase = iota // IDENTIFY sent
	phaseVerify                // VERIFY_IDENTITY sent
	phaseJoin                  // JOIN sent
	phaseCreate                // CREATE_CHANNEL sent
	phaseHistory               // JOINED read; collecting the replay
	phaseLive
)

// session is one connection's life, run on Run's goroutine: every field of
// the Client it touches outside c.mu is owned by that goroutine.
type session struct {
	c         *Client
	conn      *wsConn
	reconnect bool
	phase     phase
	agentID   string
	connected bool // WELCOME read
	live      bool // joined and caught up

	joined  Joined
	history []Message

	handshake, quiet, pace, echo alarm
	saidLurk                     bool
	pinging, pingAgain           bool // a clock reading is on its way; another was asked for meanwhile
}

// alarm is a timer that can sit in a select while disarmed.
type alarm struct {
	t *time.Timer
	c <-chan time.Time
}

func (a *alarm) set(d time.Duration) {
	if a.t == nil {
		a.t = time.NewTimer(d)
	} else {
		a.t.Reset(d)
	}
	a.c = a.t.C
}

func (a *alarm) stop() {
	if a.t != nil {
		a.t.Stop()
	}
	a.c = nil
}

func (a *alarm) armed() bool { return a.c != nil }

func (c *Client) session(ctx context.Context, reconnect bool) (*session, error) {
	conn, err := dial(ctx, c.cfg.URL, &c.cfg)
	if err != nil {
		return nil, err
	}
	s := &session{c: c, conn: conn, reconnect: reconnect}
	defer func() {
		conn.close(ctx.Err() != nil)
		s.handshake.stop()
		s.quiet.stop()
		s.pace.stop()
		s.echo.stop()
	}()
	id := identifyFrame{Type: "IDENTIFY", Name: c.cfg.Name}
	if c.cfg.Identity != nil {
		id.Pubkey = c.cfg.Identity.PublicPEM()
	}
	if err := conn.send(id); err != nil {
		return s, err
	}
	s.handshake.set(c.cfg.WriteTimeout + c.cfg.ReadTimeout/2)
	for {
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case in := <-conn.in:
			if in.err != nil {
				return s, readError(in.err)
			}
			if err := s.handle(in.f); err != nil {
				return s, err
			}
		case <-c.wake:
			s.maybeSend()
		case <-c.pings:
			s.ping()
		case <-s.pace.c:
			s.pace.c = nil
			s.maybeSend()
		case <-s.quiet.c:
			s.quiet.c = nil
			s.finishHistory()
		case <-s.handshake.c:
			return s, errors.New("the chat server did not finish signing in and joining in time")
		case <-s.echo.c:
			return s, fmt.Errorf("the chat server did not echo foreman's message within %s; reconnecting to check whether it arrived", c.cfg.EchoTimeout)
		}
	}
}

func readError(err error) error {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		switch ce.Code {
		case websocket.ClosePolicyViolation:
			return fmt.Errorf("the chat server closed the connection for sending too many frames (%w)", err)
		case websocket.CloseMessageTooBig:
			return fmt.Errorf("the chat server closed the connection because a frame was too big (%w)", err)
		}
	}
	return err
}

func (s *session) handle(f *frame) error {
	c := s.c
	if f.bad != "" {
		c.log.Warn().Str("frame", f.bad).Msg("ignored a frame from the chat server that foreman cannot read")
		return nil
	}
	if s.phase == phaseHistory {
		switch {
		case s.elsewhere(f):
			return nil
		case f.Type == "MSG" && f.Replay:
			s.collect(f)
			return nil
		case f.Type == "PONG":
			s.finishHistory()
			return nil
		}
		s.finishHistory() // the first live frame ends the replay
	}
	switch f.Type {
	case "SESSION_DISPLACED":
		return fatal(CodeSessionDisplaced, f.Reason, s.agentID, c.cfg.Channel)
	case "ERROR":
		return s.onError(f)
	}
	switch s.phase {
	case phaseIdentify, phaseVerify:
		switch f.Type {
		case "CHALLENGE":
			if c.cfg.Identity == nil || s.phase != phaseIdentify {
				return fatal(codeUnexpected, "a CHALLENGE foreman did not ask for", c.AgentID(), c.cfg.Channel)
			}
			s.phase = phaseVerify
			ts := time.Now().UnixMilli()
			return s.conn.send(verifyFrame{
				Type:        "VERIFY_IDENTITY",
				ChallengeID: f.ChallengeID,
				Signature:   c.cfg.Identity.SignChallenge(f.Nonce, f.ChallengeID, ts),
				Timestamp:   ts,
			})
		case "WELCOME":
			return s.welcome(f)
		}
	case phaseJoin, phaseCreate:
		if f.Type == "JOINED" && f.Channel == c.cfg.Channel {
			return s.onJoined(f)
		}
	case phaseLive:
		s.onLive(f)
	}
	return nil
}

// elsewhere: traffic of channels other than ours, which WELCOME joined
// without asking.
func (s *session) elsewhere(f *frame) bool {
	switch f.Type {
	case "MSG":
		return f.To != s.c.cfg.Channel
	case "AGENT_JOINED", "AGENT_LEFT", "JOINED", "LEFT":
		return f.Channel != s.c.cfg.Channel
	}
	return false
}

func (s *session) welcome(f *frame) error {
	c := s.c
	s.connected = true
	s.agentID = f.AgentID
	if c.cfg.Identity != nil && f.AgentID != c.cfg.Identity.AgentID() {
		c.log.Warn().Msgf("the chat server calls foreman %s, not %s as its key implies; using the server's id", f.AgentID, c.cfg.Identity.AgentID())
	}
	c.setAgentID(f.AgentID)
	// WELCOME's lurk fields are advice: a stock server sends them to every
	// new key even when it lets the key send (LURK_DISABLED). Only an
	// identity without a key cannot send, ever; a keyed one tries, and
	// waits only when a MSG is refused with LURK_MODE.
	c.lurkUntil, c.lurkForever = time.Time{}, f.Lurk && c.cfg.Identity == nil
	if s.reconnect {
		c.reconnects.Add(1)
	}
	c.log.Info().Msgf("signed in to the chat server at %s as %s (%s)", c.cfg.URL, f.AgentID, c.cfg.Name)
	switch {
	case c.lurkForever && c.cfg.Identity == nil:
		c.log.Warn().Msgf("%s has no identity key, so the chat server lets it listen but not send; anything it has to say stays queued", c.cfg.Name)
	case c.lurkForever:
		c.log.Warn().Msgf("the chat server lets %s listen but not send (%s); anything it has to say stays queued", f.AgentID, f.LurkReason)
	case f.Lurk && f.LurkUntil != 0:
		// Debug, not info: a server that lets the key send (foreman's own,
		// or a stock one run with LURK_DISABLED) makes this advice noise on
		// every first run, and one that does not refuses the first message
		// with LURK_MODE, which is warned of then with the unlock time.
		until := msTime(f.LurkUntil)
		c.log.Debug().Msgf("the chat server calls %s a new identity that may send only from %s; foreman tries to send anyway (a server run with LURK_DISABLED lets it) and waits only if the server refuses",
			f.AgentID, until.Format(time.DateTime))
	}
	c.events.push(Connected{
		AgentID: f.AgentID, Name: f.Name, Verified: f.Verified,
		Lurk: f.Lurk, LurkUntil: msTime(f.LurkUntil), Reconnect: s.reconnect,
	})
	s.phase = phaseJoin
	return s.conn.send(channelFrame{Type: "JOIN", Channel: c.cfg.Channel})
}

func (s *session) onJoined(f *frame) error {
	c := s.c
	created := s.phase == phaseCreate
	s.joined = Joined{Channel: c.cfg.Channel, Agents: f.agents(), Created: created, Reconnect: s.reconnect, TS: msTime(f.TS)}
	if created {
		c.log.Info().Msgf("created channel %s", c.cfg.Channel)
		s.finishHistory()
		return nil
	}
	// The server sends JOINED and the whole replay before it reads the
	// next frame, so the answer to this PING marks the end of the replay.
	s.phase = phaseHistory
	s.quiet.set(c.cfg.HistoryWait)
	return s.conn.send(typeFrame{Type: "PING"})
}

func (s *session) collect(f *frame) {
	m := f.message(s.agentID)
	s.joined.Replayed++
	if s.c.seen.has(m.key()) {
		s.joined.Overlap = true
	} else {
		s.history = append(s.history, m)
	}
	s.quiet.set(s.c.cfg.HistoryWait)
}

// finishHistory hands over the catch-up and goes live. A message left
// unconfirmed by the last connection is looked for in the replay: if the
// room has it, it was delivered; if not, it goes out again.
func (s *session) finishHistory() {
	c := s.c
	s.quiet.stop()
	s.handshake.stop()
	var delivered *Delivered
	if b := c.inflight; b != nil {
		found := -1
		for i := len(s.history) - 1; i >= 0; i-- {
			if m := s.history[i]; m.Self && !m.Notice && b.is(m) {
				found = i
				break
			}
		}
		if found >= 0 {
			m := s.history[found]
			s.history = append(s.history[:found], s.history[found+1:]...)
			delivered = s.confirm(b, m)
			c.log.Info().Msgf("the room has the message foreman sent before the connection dropped (%d lines)", len(b.lines))
		} else {
			c.requeue(b)
			c.log.Info().Msgf("the message foreman sent before the connection dropped never reached the room; sending its %d lines again", len(b.lines))
		}
	}
	for i := range s.history {
		c.seen.add(s.history[i].key())
	}
	s.joined.History = s.history
	s.history = nil
	c.everJoined = true
	c.log.Info().Msgf("joined %s (%d agents there, %d messages of history to catch up on)", c.cfg.Channel, len(s.joined.Agents), len(s.joined.History))
	c.events.push(s.joined)
	if delivered != nil {
		c.events.push(*delivered)
	}
	s.phase = phaseLive
	s.live = true
	s.maybeSend()
	if s.pingAgain {
		s.pingAgain = false
		s.ping()
	}
}

func (s *session) onLive(f *frame) {
	c := s.c
	if s.elsewhere(f) {
		return
	}
	switch f.Type {
	case "MSG":
		m := f.message(s.agentID)
		if m.Self && !m.Notice && !m.Replay {
			if b := c.inflight; b != nil && b.is(m) {
				d := s.confirm(b, m)
				c.events.push(*d)
				s.maybeSend()
				return
			}
			// Not what this connection sent: another program with this
			// identity is in the room. The caller decides what that means.
			c.seen.add(m.key())
			c.log.Warn().Str("msg_id", m.ID).Msg("the room echoed a message from this identity that this connection did not send")
			c.events.push(m)
			return
		}
		if c.seen.has(m.key()) {
			return
		}
		c.seen.add(m.key())
		c.events.push(m)
	case "PONG":
		s.pinging = false
		c.events.push(Clock{TS: msTime(f.TS)})
		if s.pingAgain {
			s.pingAgain = false
			s.ping()
		}
	case "AGENT_JOINED":
		c.events.push(AgentJoined{Channel: f.Channel, Agent: Agent{ID: f.Agent, Name: f.Name, Verified: f.Verified}})
	case "AGENT_LEFT":
		c.events.push(AgentLeft{Channel: f.Channel, Agent: Agent{ID: f.Agent, Name: f.Name, Verified: f.Verified}})
	}
}

// confirm records that the room has batch b as message m.
func (s *session) confirm(b *batch, m Message) *Delivered {
	c := s.c
	s.echo.stop()
	c.inflight = nil
	c.mu.Lock()
	c.inflightN = 0
	c.mu.Unlock()
	c.seen.add(m.key())
	c.messagesSent.Add(1)
	s.speedUp()
	c.skew.add(m.TS, c.sentAt)
	s.paceFrom(m.TS)
	c.linesSent.Add(int64(len(b.lines)))
	return &Delivered{Seqs: b.seqs(), MsgID: m.ID, TS: m.TS}
}

func (s *session) onError(f *frame) error {
	c := s.c
	code, msg := f.Code, f.Message
	switch s.phase {
	case phaseIdentify, phaseVerify:
		if code == CodeVerificationExpired {
			return fmt.Errorf("the chat server's sign-in challenge expired (%s)", msg)
		}
		if se := fatal(code, msg, c.AgentID(), c.cfg.Channel); se != nil {
			return se
		}
		return fmt.Errorf("the chat server refused to sign foreman in: %s %s", code, msg)
	case phaseJoin:
		switch code {
		case CodeChannelNotFound:
			if c.cfg.CreateChannel {
				c.log.Info().Msgf("channel %s does not exist; creating it", c.cfg.Channel)
				s.phase = phaseCreate
				return s.conn.send(channelFrame{Type: "CREATE_CHANNEL", Channel: c.cfg.Channel})
			}
			return s.channelTrouble(code, msg)
		}
		return s.channelTrouble(code, msg)
	case phaseCreate:
		if code == CodeChannelExists { // someone created it meanwhile
			s.phase = phaseJoin
			return s.conn.send(channelFrame{Type: "JOIN", Channel: c.cfg.Channel})
		}
		return s.channelTrouble(code, msg)
	case phaseLive:
		return s.liveError(code, msg, msTime(f.TS))
	}
	c.log.Warn().Msgf("the chat server reported %s: %s", code, msg)
	c.events.push(ServerError{Code: code, Message: msg})
	return nil
}

// channelTrouble: the channel cannot be joined. On the first connection
// that is a configuration problem to report; after a server restart it may
// be recreated, so the client keeps trying.
func (s *session) channelTrouble(code, msg string) error {
	c := s.c
	se := fatal(code, msg, c.AgentID(), c.cfg.Channel)
	if se == nil {
		se = &ServerError{Code: code, Message: msg,
			Advice: fmt.Sprintf("identity %s may not join channel %s (%s %s); ask the server's admin", c.AgentID(), c.cfg.Channel, code, msg)}
	}
	if !c.everJoined {
		return se
	}
	c.events.push(*se)
	return errors.New(se.Advice)
}

func (s *session) liveError(code, msg string, errTS time.Time) error {
	c := s.c
	b := c.inflight
	if b != nil {
		s.echo.stop()
		// A refused MSG still used the room's slot (any error does), at
		// the time the refusal is stamped with.
		s.paceFrom(errTS)
	}
	switch {
	case code == CodeRateLimited && b != nil:
		c.requeue(b)
		c.resent.Add(1)
		s.slowDown()
		s.maybeSend()
		return nil
	case code == CodeLurkMode && b != nil:
		c.requeue(b)
		until := unlockTime(msg)
		if now := time.Now(); !until.After(now) {
			// The server's clock is ahead of ours by at least now-until.
			until = now.Add(min(max(now.Sub(until), 0)+time.Second, time.Minute))
		}
		c.lurkUntil = until
		advice := fmt.Sprintf("the chat server does not yet let %s send (%s); foreman keeps its replies and sends them from %s (in %s)",
			c.AgentID(), msg, until.Format(time.DateTime), time.Until(until).Round(time.Second))
		c.log.Warn().Msg(advice)
		c.events.push(ServerError{Code: code, Message: msg, Advice: advice})
		s.maybeSend()
		return nil
	case (code == CodeNotInvited || code == CodeChannelNotFound) && b != nil:
		c.requeue(b)
		return fmt.Errorf("the chat server says foreman is not in %s any more (%s %s); rejoining", c.cfg.Channel, code, msg)
	case b != nil && code == CodeInvalidMsg:
		// Sending it again would be refused again, forever.
		c.inflight = nil
		c.mu.Lock()
		c.inflightN = 0
		c.mu.Unlock()
		c.log.Error().Msgf("the chat server refused a message as invalid (%s); its %d lines are dropped", msg, len(b.lines))
	}
	c.log.Warn().Msgf("the chat server reported %s: %s", code, msg)
	c.events.push(ServerError{Code: code, Message: msg})
	s.maybeSend()
	return nil
}

// slowDown: the room refused a MSG as too fast, so it is stricter than
// configured (or the network bunched two MSGs up). The refused attempt
// restarted the room's clock, so the next one waits a whole new period.
func (s *session) slowDown() {
	c := s.c
	ceiling := max(8*c.cfg.RateLimit, time.Minute)
	c.interval = min(max(2*c.interval, 10*time.Millisecond), ceiling)
	c.smooth = 0
	if later := time.Now().Add(c.interval); later.After(c.nextSend) {
		c.nextSend = later
	}
	c.log.Warn().Msgf("the chat server refused a message as too fast (RATE_LIMITED); sending it again, and pacing at one message per %s from now on (server.rate_limit is %s)",
		c.interval.Round(time.Millisecond), c.cfg.RateLimit)
}

// smoothRun is how many MSGs in a row the room must accept before the
// client paces faster again after a refusal.
const smoothRun = 20

// speedUp: after a run of accepted MSGs at a slowed pace, step back a
// quarter of the way toward the configured pace. A room that really is
// stricter refuses again and the pace doubles again; one resent MSG per
// run is the price of not staying slow forever after a single hiccup.
func (s *session) speedUp() {
	c := s.c
	if c.interval <= c.base {
		return
	}
	if c.smooth++; c.smooth < smoothRun {
		return
	}
	c.smooth = 0
	gap := (c.interval - c.base) * 3 / 4
	if gap < c.base/10 { // close enough: the configured pace has its own margin
		gap = 0
	}
	c.interval = c.base + gap
	c.log.Info().Msgf("the chat server accepted %d messages in a row; pacing at one message per %s", smoothRun, c.interval.Round(time.Millisecond))
}

// unlockTime reads "... sending unlocks at <ISO time>".
func unlockTime(msg string) time.Time {
	i := strings.LastIndex(msg, " at ")
	if i < 0 {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, strings.TrimRight(strings.TrimSpace(msg[i+4:]), "."))
	if err != nil {
		return time.Time{}
	}
	return t
}

// lurkMargin covers the rounding of unlock times to milliseconds and the
// timer's own slack, so the first attempt after unlocking is not refused.
const lurkMargin = 50 * time.Millisecond

// maybeSend sends the next batch if the room allows it now, or sets the
// alarm for when it will.
func (s *session) maybeSend() {
	c := s.c
	if !s.live || c.inflight != nil || s.pace.armed() || c.queued() == 0 {
		return
	}
	now := time.Now()
	if c.lurkForever {
		if !s.saidLurk {
			s.saidLurk = true
			c.log.Warn().Msgf("%d lines wait to be sent, but the chat server lets foreman only listen", c.queued())
		}
		return
	}
	if unlock := c.lurkUntil.Add(lurkMargin); now.Before(unlock) {
		s.pace.set(unlock.Sub(now))
		return
	}
	if d := c.nextSend.Sub(now); d > 0 {
		s.pace.set(d)
		return
	}
	r := c.flood.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		s.pace.set(d)
		return
	}
	s.sendNow()
}

func (s *session) sendNow() {
	c := s.c
	b := c.take()
	if b == nil {
		return
	}
	c.inflight, c.sentAt = b, time.Now()
	s.echo.set(c.cfg.EchoTimeout)
	// A failed send leaves the batch unconfirmed; the next connection finds
	// it missing from the replay and sends it again.
	_ = s.conn.send(msgFrame{Type: "MSG", To: c.cfg.Channel, Content: b.content})
}

// paceFrom sets when the next MSG may go: one period after the server took
// the last one, by the server's own stamp on its echo or refusal, read on
// our clock. Waiting for the echo and then a whole period, as a client
// that cannot read the server's clock must, loses the echo's delay on
// every message when the room is slow to echo.
func (s *session) paceFrom(serverTS time.Time) {
	c := s.c
	if c.interval == 0 {
		// No rate limit: nothing to wait for. The server's clock counts
		// whole milliseconds, so reading it would only add up to one.
		c.nextSend = time.Time{}
		return
	}
	from, ok := c.skew.local(serverTS)
	if !ok {
		from = time.Now()
	}
	c.nextSend = from.Add(c.interval)
}

// ping asks the room for its clock, unless an answer is on its way (then
// one more follows it, for whoever asked meanwhile). It is a frame like
// any other under the server's flood limit.
func (s *session) ping() {
	c := s.c
	if !s.live { // asked while joining: answered once live
		s.pingAgain = true
		return
	}
	if s.pinging {
		s.pingAgain = true
		return
	}
	now := time.Now()
	if r := c.flood.ReserveN(now, 1); r.DelayFrom(now) > 0 {
		r.CancelAt(now)
		s.pingAgain = false
		go func(d time.Duration) { time.Sleep(d); c.Ping() }(r.DelayFrom(now))
		return
	}
	s.pinging = true
	_ = s.conn.send(typeFrame{Type: "PING"})
}

// is reports whether m is the room's copy of b: by its stamp when b was
// stamped (a room may rewrite content, as a stock server redacts what looks
// like a secret), else by its content.
func (b *batch) is(m Message) bool {
	if b.stamp.Tag != "" {
		return m.Stamp != nil && m.Stamp.Tag == b.stamp.Tag && len(b.lines) > 0 && m.Stamp.Contains(b.lines[0].Seq)
	}
	return m.Content == b.content || m.Content == roomForm(b.content)
}

// roomForm is content as the room gives it back: JSON has each invalid
// UTF-8 byte become U+FFFD, and a stock server redacts what looks like a
// secret.
func roomForm(content string) string {
	text, _ := Redact(string([]rune(content)))
	return text
}

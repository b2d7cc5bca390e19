// Package loadtest is foreman's live load tool (`foreman bench`): it drives
// many simulated agents, each a real AgentChat client with its own key,
// against a chat server and a real foreman running as a child process,
// and reports how long each CLAIM took to be answered with an ACK, whether
// every claim was answered, what the room refused as too fast, and what
// the bot cost in CPU time and memory.
//
// The bot runs apart from the agents so that /proc can tell its costs from
// theirs. Every member of a room receives every message, so the agents and
// the server do work that grows with the square of their number; on a small
// machine that work competes with the bot for the CPUs, and the report
// gives the harness's own CPU time to show how much.
package loadtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/agentchat/server"
)

// Options configure a run. Zero fields take the defaults given, but for
// Settle, where zero means no pause and a negative value the default.
type Options struct {
	Agents int    // simulated agents, one claim each (default 1000)
	URL    string // the chat server; "" starts the embedded one on 127.0.0.1
	// RateLimit is the room's: one message per RateLimit per connection;
	// 0: none. The embedded server is started with it.
	RateLimit time.Duration
	// FloodLimit is the room's frames per 10s per connection: -1 none, 0
	// none without a rate limit and the stock 60 with one.
	FloodLimit   int
	Spread       time.Duration // the claims go out at random over this (default 10s)
	Simultaneous bool          // all claims at once instead
	// Settle is the pause between the bot's first TASKS reaching every agent
	// and the first claim; negative takes the default: one of the bot's
	// send slots (so that its first ACK does not wait on the TASKS it just
	// sent) and a moment more.
	Settle  time.Duration
	Journal bool
	Channel string        // default #build
	Binary  string        // the foreman binary to run the bot with (default this executable)
	Timeout time.Duration // how long to wait for answers after the last claim (default 30s)
	Seed    uint64        // for the spread; 0 picks one
	// Dir keeps the bot's config, log and journal; "" uses a temporary
	// directory, removed after a run where every ACK arrived.
	Dir string
	// Keys, if set, is a directory of fixed keys (foreman.json and
	// agent-NNNN.json), made on the first run and reused after: a stock
	// server lets a key send only once it is an hour old (unless started
	// with LURK_DISABLED=true), so a run against one needs keys it has seen.
	Keys     string
	Progress io.Writer // a line per phase; nil: silent
}

// identity is the key named name: a new one, or the one kept in o.Keys.
func (o *Options) identity(name string) (*agentchat.Identity, error) {
	if o.Keys == "" {
		return agentchat.NewIdentity(name)
	}
	if err := os.MkdirAll(o.Keys, 0o700); err != nil {
		return nil, err
	}
	id, _, err := agentchat.LoadOrCreateIdentity(filepath.Join(o.Keys, name+".json"), name)
	return id, err
}

func (o *Options) defaults() error {
	if o.Agents == 0 {
		o.Agents = 1000
	}
	if o.Agents < 0 {
		return errors.New("--agents must be at least 1")
	}
	if o.Spread <= 0 {
		o.Spread = 10 * time.Second
	}
	if o.RateLimit < 0 {
		return errors.New("--rate-limit must not be negative")
	}
	if o.FloodLimit == 0 {
		o.FloodLimit = -1
		if o.RateLimit > 0 {
			o.FloodLimit = stockFloodFrames
		}
	}
	if o.Settle < 0 {
		o.Settle = 250 * time.Millisecond
		if o.RateLimit > 0 {
			// The client's pace is the limit plus a tenth (at least 10ms).
			o.Settle += o.RateLimit + max(o.RateLimit/10, 10*time.Millisecond)
		}
	}
	if o.Channel == "" {
		o.Channel = "#build"
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.Seed == 0 {
		o.Seed = rand.Uint64()
	}
	if o.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("cannot find the foreman binary to run the bot with: %w", err)
		}
		o.Binary = exe
	}
	if o.URL != "" {
		return checkLocal(o.URL)
	}
	return nil
}

const stockFloodFrames = 60

// checkLocal refuses any server but one on this machine: the tool opens
// hundreds of connections and sends bursts, which is no way to treat a
// server someone else runs.
func checkLocal(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("--url: %w", err)
	}
	if u.Scheme != "ws" {
		return fmt.Errorf("--url: %q is not a ws:// URL", raw)
	}
	switch u.Hostname() {
	case "127.0.0.1", "localhost":
		return nil
	}
	return fmt.Errorf("--url: %s is not on this machine; the load tool only runs against 127.0.0.1 or localhost", u.Host)
}

// joinConcurrency bounds the sign-ins in progress: a thousand at once would
// only queue on the server's lock and time out the slowest.
const joinConcurrency = 32

// Run performs one load run and reports it. An error means the run could
// not be carried out; missing ACKs are in the report (Report.OK).
func Run(ctx context.Context, o Options) (_ *Report, err error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	progress := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "bench: "+format+"\n", args...)
		}
	}
	r := &Report{
		Machine: Machine{CPUs: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH, CPUModel: cpuModel(),
			GoVersion: runtime.Version()},
		Scenario: Scenario{Server: "embedded", RateLimit: o.RateLimit.String(), FloodLimit: o.FloodLimit,
			Simultaneous: o.Simultaneous, SettleSec: o.Settle.Seconds(), Journal: o.Journal},
		Agents: o.Agents, Expected: o.Agents,
	}
	if !o.Simultaneous {
		r.Scenario.SpreadSec = o.Spread.Seconds()
	}

	dir, keep := o.Dir, o.Dir != ""
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "foreman-bench-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	defer func() {
		_, logErr := os.Stat(filepath.Join(dir, "foreman.log"))
		switch {
		case err != nil && logErr == nil:
			err = fmt.Errorf("%w (the bot's config and log are kept in %s)", err, dir)
		case err == nil && (keep || !r.OK()):
			r.Dir = dir
		case !keep:
			os.RemoveAll(dir)
		}
	}()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	roomURL := o.URL
	if roomURL == "" {
		srv, err := startServer(ctx, o)
		if err != nil {
			return nil, err
		}
		defer srv.Close()
		roomURL = srv.URL()
	} else {
		r.Scenario.Server = roomURL
	}

	botID, err := o.identity("foreman")
	if err != nil {
		return nil, err
	}
	if o.URL != "" {
		if err := openChannel(ctx, roomURL, o.Channel, botID); err != nil {
			return nil, err
		}
	}
	comps := componentNames(o.Agents)
	agents := make([]*simAgent, o.Agents)
	// The agents join before the bot, so on a server without the channel
	// they create it where their keys may (a stock server: verified keys).
	clientCfg := agentchat.Config{URL: roomURL, Channel: o.Channel, RateLimit: clientRate(o.RateLimit), FloodLimit: o.FloodLimit,
		CreateChannel: true}
	for i := range agents {
		id, err := o.identity(fmt.Sprintf("agent-%04d", i+1))
		if err != nil {
			return nil, err
		}
		if agents[i], err = newSimAgent(id, comps[i], botID.AgentID(), clientCfg); err != nil {
			return nil, err
		}
	}
	agentsCtx, stopAgents := context.WithCancel(ctx)
	defer func() {
		stopAgents()
		for _, a := range agents {
			if a != nil && a.started {
				<-a.done
			}
		}
	}()

	progress("%d agents joining %s at %s", o.Agents, o.Channel, roomURL)
	began := time.Now()
	if err := joinAll(agentsCtx, agents, 30*time.Second+time.Duration(o.Agents)*30*time.Millisecond); err != nil {
		return nil, err
	}
	r.JoinSeconds = time.Since(began).Seconds()

	progress("starting foreman run (%s) with %d components", o.Binary, o.Agents)
	bot, err := startBot(ctx, botSpec{
		id: botID, binary: o.Binary, dir: dir, url: roomURL, channel: o.Channel,
		rateLimit: o.RateLimit, floodLimit: o.FloodLimit, components: comps, journal: o.Journal,
	})
	if err != nil {
		return nil, err
	}
	progress("foreman run is pid %d, serving %s", bot.pid(), bot.board)
	stopped := false
	defer func() {
		if !stopped {
			bot.stop()
		}
	}()
	if err := waitAll(ctx, agents, func(a *simAgent) <-chan struct{} { return a.heardTasks }, 60*time.Second, bot); err != nil {
		return nil, fmt.Errorf("waiting for every agent to hear the bot's TASKS: %w; the bot's log:\n%s", err, bot.tail(20))
	}
	if !sleep(ctx, o.Settle) {
		return nil, ctx.Err()
	}
	// The join's garbage is collected now rather than during the claims.
	runtime.GC()

	m0, _ := scrape(ctx, bot.board)
	p0, measured := readProc(bot.pid())
	h0, _ := readProc(os.Getpid())
	if o.Simultaneous {
		progress("%d claims at once", o.Agents)
	} else {
		progress("%d claims spread over %s", o.Agents, o.Spread)
	}
	lastSent := sendClaims(ctx, agents, o)
	first := lastSent
	for _, a := range agents {
		if !a.sentAt.IsZero() {
			r.Claims++
			if a.sentAt.Before(first) {
				first = a.sentAt
			}
		}
	}
	waitAnswers(ctx, agents, lastSent.Add(o.Timeout))
	end := time.Now()
	if err := ctx.Err(); err != nil {
		return nil, err // interrupted: the figures would mean nothing
	}
	p1, _ := readProc(bot.pid())
	h1, _ := readProc(os.Getpid())

	for _, a := range agents {
		r.RateLimited += a.rateLimited.Load()
		r.AgentResent += a.client.Stats().Resent
		r.AgentDisconnects += a.disconnects.Load()
		if err := a.err(); err != nil && len(r.AgentErrors) < 5 {
			r.AgentErrors = append(r.AgentErrors, err.Error())
		}
		for _, e := range a.errors() {
			if !strings.HasPrefix(e, agentchat.CodeRateLimited) && len(r.AgentErrors) < 5 {
				r.AgentErrors = append(r.AgentErrors, "the server said "+e)
			}
		}
	}
	var lat, echo, atServer []time.Duration
	lastAck := first
	for _, a := range agents {
		echoed := false
		select {
		case <-a.echoed:
			echoed = true
			echo = append(echo, a.echoAt.Sub(a.sentAt))
		default:
		}
		select {
		case <-a.answered:
		default:
			r.Missing++
			continue
		}
		switch {
		case a.acked():
			r.Acks++
			lat = append(lat, a.ackAt.Sub(a.sentAt))
			if echoed {
				atServer = append(atServer, a.ackTS.Sub(a.echoTS))
			}
			if a.ackAt.After(lastAck) {
				lastAck = a.ackAt
			}
			continue
		case strings.HasPrefix(a.answer, "REJECT "):
			r.Rejects++
		default:
			r.Errors++
		}
		if len(r.Refusals) < 5 {
			r.Refusals = append(r.Refusals, a.answer)
		}
	}
	r.Latency = latencyOf(lat)
	r.Quarters = quarters(agents)
	r.Echo = latencyOf(echo)
	r.AtServer = latencyOf(atServer)
	r.LastAckMicros = lastAck.Sub(first).Microseconds()
	r.ClaimsSeconds = end.Sub(first).Seconds()

	// Read before the last scrapes, which cost the bot CPU of their own.
	pEnd, _ := readProc(bot.pid())
	m1, merr := settledMetrics(ctx, bot.board)
	progress("stopping foreman run")
	stopped = true
	if err := bot.stop(); err != nil {
		progress("foreman run ended with %v", err)
	}
	r.Bot = botStats(m0, m1, merr)
	if r.ClaimsSeconds > 0 {
		r.Bot.CommitsPerSecond = float64(r.Bot.ClaimsCommits) / r.ClaimsSeconds
	}
	if measured {
		r.Bot.Measured = true
		r.Bot.CPUSeconds = pEnd.CPU.Seconds()
		r.Bot.ClaimsCPUSeconds = (p1.CPU - p0.CPU).Seconds()
		r.Bot.CPUPer1000Claims = r.Bot.ClaimsCPUSeconds * 1000 / float64(o.Agents)
		r.Bot.PeakRSSBytes, r.Bot.RSSBytes = pEnd.PeakRSS, pEnd.RSS
		r.Harness.CPUSeconds = h1.CPU.Seconds()
		r.Harness.ClaimsCPUSeconds = (h1.CPU - h0.CPU).Seconds()
	}
	r.Targets = targets(o, r)
	return r, nil
}

// startServer starts the embedded server with the room's limits. Only the
// bench's channel exists: the stock set would add #general, where every
// sign-in is announced to everyone, work that has nothing to do with the bot.
func startServer(ctx context.Context, o Options) (*server.Server, error) {
	cfg := server.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.Channels = []string{o.Channel}
	cfg.RateLimit = o.RateLimit
	cfg.Logger = zerolog.Nop()
	if o.FloodLimit < 0 {
		cfg.FloodFrames, cfg.FloodPreIdentify = 1<<30, 1<<30
	} else {
		cfg.FloodFrames = o.FloodLimit
	}
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("starting the embedded chat server: %w", err)
	}
	return srv, nil
}

// clientRate maps the room's rate limit (0: none) to the client's
// (negative: none).
func clientRate(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// componentNames are c1..cN, zero-padded so that they sort in order.
func componentNames(n int) []string {
	width := len(strconv.Itoa(n))
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("c%0*d", width, i+1)
	}
	return out
}

// joinAll connects every agent, a bounded number signing in at a time, and
// waits until all are in the channel.
func joinAll(ctx context.Context, agents []*simAgent, timeout time.Duration) error {
	deadline := time.After(timeout)
	sem := make(chan struct{}, joinConcurrency)
	for _, a := range agents {
		select {
		case sem <- struct{}{}:
		case <-deadline:
			return fmt.Errorf("the agents did not all join within %s", timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
		a.run(ctx)
		go func() {
			select {
			case <-a.joined:
			case <-a.done:
			case <-ctx.Done():
			}
			<-sem
		}()
	}
	return waitAll(ctx, agents, func(a *simAgent) <-chan struct{} { return a.joined }, timeout, nil)
}

// waitAll waits until ch(a) is closed for every agent. It gives up when an
// agent's client stops for good, when bot (if any) exits, or at timeout.
func waitAll(ctx context.Context, agents []*simAgent, ch func(*simAgent) <-chan struct{}, timeout time.Duration, bot *botProc) error {
	deadline := time.After(timeout)
	var exited <-chan struct{}
	if bot != nil {
		exited = bot.exited
	}
	for i, a := range agents {
		select {
		case <-ch(a):
		case <-a.done:
			if err := a.err(); err != nil {
				return fmt.Errorf("agent %d: %w", i+1, err)
			}
			return fmt.Errorf("agent %d left the room", i+1)
		case <-exited:
			return fmt.Errorf("foreman run exited (%v)", bot.waitErr)
		case <-deadline:
			n := 0
			for _, b := range agents {
				select {
				case <-ch(b):
					n++
				default:
				}
			}
			return fmt.Errorf("%d of %d agents got there within %s", n, len(agents), timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// sendClaims sends every agent's claim, all at once or each at a random
// moment of the spread, and returns when the last one went out.
func sendClaims(ctx context.Context, agents []*simAgent, o Options) time.Time {
	if o.Simultaneous {
		for _, a := range agents {
			a.claim(1)
		}
		return time.Now()
	}
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed>>1|1))
	type slot struct {
		at time.Duration
		a  *simAgent
	}
	plan := make([]slot, len(agents))
	for i, a := range agents {
		plan[i] = slot{at: time.Duration(rng.Int64N(int64(o.Spread))), a: a}
	}
	slices.SortFunc(plan, func(x, y slot) int { return int(x.at - y.at) })
	start := time.Now()
	for _, s := range plan {
		if d := time.Until(start.Add(s.at)); d > 0 && !sleep(ctx, d) {
			break
		}
		s.a.claim(1)
	}
	return time.Now()
}

// waitAnswers waits until every claim is answered, or the deadline.
func waitAnswers(ctx context.Context, agents []*simAgent, deadline time.Time) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for _, a := range agents {
		select {
		case <-a.answered:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// quarters is the median CLAIM-to-ACK latency of each quarter of the
// ACKed claims, in the order they were sent: flat when the system keeps
// up, rising when work piles up faster than it is done.
func quarters(agents []*simAgent) []int64 {
	type claim struct {
		sent time.Time
		lat  time.Duration
	}
	var cs []claim
	for _, a := range agents {
		select {
		case <-a.answered:
			if a.acked() {
				cs = append(cs, claim{a.sentAt, a.ackAt.Sub(a.sentAt)})
			}
		default:
		}
	}
	if len(cs) < 4 {
		return nil
	}
	slices.SortFunc(cs, func(x, y claim) int { return x.sent.Compare(y.sent) })
	out := make([]int64, 4)
	for q := range out {
		part := cs[q*len(cs)/4 : (q+1)*len(cs)/4]
		ds := make([]time.Duration, len(part))
		for i, c := range part {
			ds[i] = c.lat
		}
		out[q] = latencyOf(ds).P50
	}
	return out
}

func lastAck(r *Report) string {
	if r.OK() {
		return "last ACK after " + us(r.LastAckMicros)
	}
	return fmt.Sprintf("%d of %d ACKs missing", r.Expected-r.Acks, r.Expected)
}

// settledMetrics scrapes the bot once its last message is confirmed: the
// agents can hear an ACK before the bot hears the echo that counts it sent.
func settledMetrics(ctx context.Context, board string) (metrics, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		m, err := scrape(ctx, board)
		if err != nil {
			return nil, err
		}
		if m.get("foreman_reply_queue_depth") == 0 || time.Now().After(deadline) {
			// The counters are raised just after the queue empties: one
			// more scrape, milliseconds later, is sure to see them.
			return scrape(ctx, board)
		}
		if !sleep(ctx, 50*time.Millisecond) {
			return nil, ctx.Err()
		}
	}
}

// botStats reads the bot's counters at the end (m1) and how they grew
// during the claims (from m0).
func botStats(m0, m1 metrics, err error) BotStats {
	var b BotStats
	if err != nil {
		b.MetricsError = err.Error()
		return b
	}
	b.MessagesSent = int64(m1.get("foreman_room_messages_sent_total"))
	b.ClaimsMessagesSent = b.MessagesSent - int64(m0.get("foreman_room_messages_sent_total"))
	b.LinesSent = int64(m1.get("foreman_room_lines_sent_total"))
	b.Resent = int64(m1.get("foreman_room_resent_total"))
	b.EventsHandled = int64(m1.get("foreman_events_handled_total"))
	b.ClaimsHandling = histogramDelta(m0, m1, "foreman_event_handling_seconds")
	b.Batches = int64(m1.get("foreman_event_handling_seconds_count"))
	if b.Batches > 0 {
		b.HandlingMeanMicros = m1.get("foreman_event_handling_seconds_sum") / float64(b.Batches) * 1e6
	}
	delta := func(series string) int64 { return int64(m1.get(series) - m0.get(series)) }
	b.ClaimsCommits = delta("foreman_journal_commits_total")
	b.ClaimsEntries = delta("foreman_journal_entries_total")
	b.ClaimsLinesHeard = delta("foreman_lines_heard_total")
	if b.ClaimsCommits > 0 {
		b.LinesPerCommit = float64(b.ClaimsLinesHeard) / float64(b.ClaimsCommits)
	}
	return b
}

// targets checks the goals where the run is their scenario.
func targets(o Options, r *Report) []Target {
	var out []Target
	switch {
	case o.URL == "" && o.RateLimit == 0 && !o.Simultaneous:
		out = append(out,
			Target{Name: "p50 <= 500µs (goal for 1,000 agents, no rate limit)", Met: r.OK() && r.Latency.P50 <= 500, Got: us(r.Latency.P50)},
			Target{Name: "p99 <= 2ms (goal for 1,000 agents, no rate limit)", Met: r.OK() && r.Latency.P99 <= 2000, Got: us(r.Latency.P99)})
	case o.RateLimit > 0 && o.Simultaneous:
		out = append(out,
			Target{Name: "every simultaneous claim answered within 2s", Met: r.OK() && r.LastAckMicros <= 2_000_000, Got: lastAck(r)},
			Target{Name: "no claim dropped", Met: r.OK() && r.Rejects == 0 && r.Errors == 0,
				Got: fmt.Sprintf("%d of %d ACKed, %d RATE_LIMITED", r.Acks, r.Expected, r.RateLimited)})
	}
	return out
}

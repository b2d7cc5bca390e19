package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/agentchat/server"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// foremanBin is the foreman binary the runs start as the bot: the test
// binary itself cannot be, it does not know `run`.
var foremanBin string

func TestMain(m *testing.M) { roomtest.RunWithForeman(m, &foremanBin) }

// checkConsistent checks what every report must satisfy, whatever the
// speed of the machine: it says nothing about how fast.
func checkConsistent(t *testing.T, r *Report, agents int) {
	t.Helper()
	assert.True(t, r.OK(), "every ACK arrives")
	assert.Equal(t, agents, r.Agents)
	assert.Equal(t, agents, r.Claims)
	assert.Equal(t, agents, r.Expected)
	assert.Equal(t, agents, r.Acks)
	assert.Zero(t, r.Missing+r.Rejects+r.Errors)
	assert.Empty(t, r.Refusals)
	assert.Empty(t, r.AgentErrors)

	l := r.Latency
	assert.Equal(t, agents, l.Count, "one latency per ACK")
	assert.True(t, 0 < l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.Max, "percentiles in order: %+v", l)
	assert.LessOrEqual(t, l.Mean, l.Max)
	assert.Equal(t, agents, r.Echo.Count, "every claim echoed")
	assert.Equal(t, agents, r.AtServer.Count, "every ACK timed by the server too")
	assert.LessOrEqual(t, r.AtServer.P50, r.AtServer.Max)
	assert.LessOrEqual(t, l.Max, r.LastAckMicros, "no ACK after the last one")

	assert.Zero(t, r.RateLimited, "the agents pace under the room's limit")
	assert.Zero(t, r.Bot.Resent, "the bot paces under the room's limit")
	assert.Empty(t, r.Bot.MetricsError)
	// TASKS, then one ACK line per claim, in as many messages as the
	// bot's batching made.
	assert.Equal(t, int64(agents+1), r.Bot.LinesSent)
	assert.True(t, 1 <= r.Bot.ClaimsMessagesSent && r.Bot.ClaimsMessagesSent <= int64(agents), "messages during claims: %d", r.Bot.ClaimsMessagesSent)
	assert.Equal(t, r.Bot.MessagesSent-1, r.Bot.ClaimsMessagesSent, "only TASKS before the claims")
	assert.GreaterOrEqual(t, r.Bot.EventsHandled, int64(agents), "each claim is an event")
	require.NotEmpty(t, r.Bot.ClaimsHandling)
	for i, b := range r.Bot.ClaimsHandling {
		assert.True(t, b.Share >= 0 && b.Share <= 1, "a share: %v", b)
		if i > 0 {
			assert.GreaterOrEqual(t, b.Share, r.Bot.ClaimsHandling[i-1].Share, "cumulative")
		}
	}

	if runtime.GOOS == "linux" {
		assert.True(t, r.Bot.Measured)
		assert.Positive(t, r.Bot.PeakRSSBytes)
		assert.GreaterOrEqual(t, r.Bot.PeakRSSBytes, r.Bot.RSSBytes)
		assert.GreaterOrEqual(t, r.Bot.CPUSeconds, r.Bot.ClaimsCPUSeconds)
	}
	assert.Positive(t, r.Machine.CPUs)
	assert.Empty(t, r.Dir, "the temporary directory is removed after a good run")

	var text bytes.Buffer
	r.WriteText(&text)
	assert.Contains(t, text.String(), fmt.Sprintf("%d of %d (0 REJECT, 0 ERROR, 0 missing)", agents, agents))
	data, err := json.Marshal(r)
	require.NoError(t, err)
	var back Report
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, *r, back)
}

func TestSpreadNoRateLimit(t *testing.T) {
	r, err := Run(context.Background(), Options{
		Agents: 20, Spread: 500 * time.Millisecond, Journal: true, Binary: foremanBin, Seed: 1, Settle: -1,
	})
	require.NoError(t, err)
	checkConsistent(t, r, 20)
	assert.Equal(t, "0s", r.Scenario.RateLimit)
	assert.Equal(t, -1, r.Scenario.FloodLimit, "no rate limit, no flood limit")
	assert.Equal(t, 0.5, r.Scenario.SpreadSec)
	assert.Len(t, r.Targets, 2, "the no-limit goals are checked")
	assert.Len(t, r.Quarters, 4, "a median per quarter of the claims")
}

func TestSimultaneousWithRateLimit(t *testing.T) {
	r, err := Run(context.Background(), Options{
		Agents: 10, RateLimit: 200 * time.Millisecond, Simultaneous: true, Journal: false, Binary: foremanBin, Settle: -1,
	})
	require.NoError(t, err)
	checkConsistent(t, r, 10)
	assert.Equal(t, stockFloodFrames, r.Scenario.FloodLimit, "a rate limit comes with the stock flood limit")
	assert.True(t, r.Scenario.Simultaneous)
	assert.Zero(t, r.Scenario.SpreadSec)
	assert.InDelta(t, 0.47, r.Scenario.SettleSec, 1e-9, "one send slot (200ms and 20ms margin) and 250ms")
	require.Len(t, r.Targets, 2, "the burst goals are checked")
}

// TestMissingAcks: claims the bot cannot answer before the deadline (its
// next send slot is seconds away) are reported missing, and the bot's
// files are kept for a look.
func TestMissingAcks(t *testing.T) {
	r, err := Run(context.Background(), Options{
		Agents: 5, RateLimit: 3 * time.Second, Simultaneous: true, Settle: 0, Timeout: 300 * time.Millisecond,
		Binary: foremanBin,
	})
	require.NoError(t, err)
	assert.False(t, r.OK())
	assert.Equal(t, 5, r.Claims)
	assert.Equal(t, 5, r.Missing)
	assert.Zero(t, r.Acks)
	assert.Zero(t, r.Latency.Count)
	require.NotEmpty(t, r.Dir)
	t.Cleanup(func() { os.RemoveAll(r.Dir) })
	assert.FileExists(t, filepath.Join(r.Dir, "foreman.log"))
	assert.FileExists(t, filepath.Join(r.Dir, "foreman.yaml"))
	for _, target := range r.Targets {
		assert.False(t, target.Met, target.Name)
	}
	var text bytes.Buffer
	r.WriteText(&text)
	assert.Contains(t, text.String(), "0 of 5 (0 REJECT, 0 ERROR, 5 missing)")
	assert.Contains(t, text.String(), "NOT MET")
	assert.Contains(t, text.String(), r.Dir)
}

func TestBotThatDoesNotStart(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "broken-foreman")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\necho 'foreman: server.url: broken' >&2\nexit 1\n"), 0o755))
	_, err := Run(context.Background(), Options{Agents: 3, Binary: script, Dir: filepath.Join(dir, "kept")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "foreman run exited at start")
	assert.Contains(t, err.Error(), "server.url: broken", "the bot's own words")
	assert.Contains(t, err.Error(), filepath.Join(dir, "kept"), "where its files are")
}

func TestRefusesRemoteServer(t *testing.T) {
	for _, url := range []string{"ws://10.1.2.3:6667", "ws://example.com:6667", "wss://127.0.0.1:6667", "http://127.0.0.1:6667"} {
		_, err := Run(context.Background(), Options{URL: url, Binary: foremanBin})
		assert.Error(t, err, url)
	}
	for _, url := range []string{"ws://127.0.0.1:6667", "ws://localhost:1"} {
		assert.NoError(t, checkLocal(url), url)
	}
}

func TestBotConfigLoads(t *testing.T) {
	dir := t.TempDir()
	id, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	path, err := writeBotConfig(botSpec{id: id, dir: dir, url: "ws://127.0.0.1:1", channel: "#bench",
		rateLimit: time.Second, floodLimit: -1, components: componentNames(12), journal: true})
	require.NoError(t, err)
	c, err := config.Load(path, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "#bench", c.Server.Channel)
	assert.Equal(t, time.Second, c.Server.RateLimit)
	assert.Equal(t, -1, c.Server.FloodLimit)
	assert.Equal(t, filepath.Join(dir, "journal"), c.Journal)
	assert.Equal(t, "127.0.0.1:0", c.HTTP)
	assert.Equal(t, 1, c.Rules.MaxClaimsPerAgent)
	require.Len(t, c.Build.Components, 12)
	assert.Equal(t, "c01", c.Build.Components[0].Name)
	assert.Equal(t, "c12", c.Build.Components[11].Name)
	loaded, err := agentchat.LoadIdentity(c.Server.Identity)
	require.NoError(t, err)
	assert.Equal(t, id.AgentID(), loaded.AgentID(), "the agents know the bot's id before it starts")
}

func TestChildEnvDropsForemanVariables(t *testing.T) {
	t.Setenv("FOREMAN_SERVER_URL", "ws://elsewhere:1")
	for _, kv := range childEnv() {
		assert.False(t, strings.HasPrefix(kv, "FOREMAN_"), kv)
	}
}

func TestParseProc(t *testing.T) {
	cpu, err := parseStatCPU([]byte("4242 (a (weird) name) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 37 0 0 20 0 9 0 100 0 0"))
	require.NoError(t, err)
	assert.Equal(t, 2870*time.Millisecond, cpu, "utime 250 and stime 37 ticks of 10ms")
	_, err = parseStatCPU([]byte("4242 (x) S 1"))
	assert.Error(t, err)

	peak, now := parseStatusRSS([]byte("Name:\tforeman\nVmHWM:\t   23040 kB\nVmRSS:\t   20480 kB\nThreads:\t9\n"))
	assert.Equal(t, int64(23040*1024), peak)
	assert.Equal(t, int64(20480*1024), now)

	if runtime.GOOS == "linux" {
		st, ok := readProc(os.Getpid())
		require.True(t, ok)
		assert.Positive(t, st.PeakRSS)
	}
}

func TestParseMetrics(t *testing.T) {
	m, err := parseMetrics(strings.NewReader(`# HELP foreman_room_resent_total Messages refused as too fast and sent again.
# TYPE foreman_room_resent_total counter
foreman_room_resent_total 3
foreman_replies_total{verb="ACK"} 1000
foreman_event_handling_seconds_sum 0.25
foreman_event_handling_seconds_bucket{le="+Inf"} 40
odd line
`))
	require.NoError(t, err)
	assert.Equal(t, 3.0, m.get("foreman_room_resent_total"))
	assert.Equal(t, 1000.0, m.get(`foreman_replies_total{verb="ACK"}`))
	assert.Equal(t, 40.0, m.get(`foreman_event_handling_seconds_bucket{le="+Inf"}`))
	assert.Zero(t, m.get("foreman_room_messages_sent_total"), "absent is 0")

	b := botStats(metrics{"foreman_room_messages_sent_total": 1}, metrics{
		"foreman_room_messages_sent_total": 5, "foreman_event_handling_seconds_sum": 0.002,
		"foreman_event_handling_seconds_count": 4,
	}, nil)
	assert.Equal(t, int64(4), b.ClaimsMessagesSent)
	assert.InDelta(t, 500, b.HandlingMeanMicros, 1e-6)
}

func TestHistogramDelta(t *testing.T) {
	m0 := metrics{
		`h_bucket{le="0.0001"}`: 1, `h_bucket{le="0.0004"}`: 2, `h_bucket{le="+Inf"}`: 2, "h_count": 2,
	}
	m1 := metrics{
		`h_bucket{le="0.0001"}`: 2, `h_bucket{le="0.0004"}`: 5, `h_bucket{le="+Inf"}`: 6, "h_count": 6,
	}
	assert.Equal(t, []Bucket{{LEMicros: 100, Share: 0.25}, {LEMicros: 400, Share: 0.75}}, histogramDelta(m0, m1, "h"))
	assert.Nil(t, histogramDelta(m1, m1, "h"), "nothing observed")
}

func TestPercentiles(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	l := latencyOf(ds)
	assert.Equal(t, Latency{Count: 100, P50: 50_000, P90: 90_000, P99: 99_000, Max: 100_000, Mean: 50_500}, l)
	assert.Equal(t, Latency{Count: 1, P50: 7, P90: 7, P99: 7, Max: 7, Mean: 7}, latencyOf([]time.Duration{7 * time.Microsecond}))
	assert.Equal(t, Latency{}, latencyOf(nil))
}

// Against a server of its own (--url) without the build's channel, with
// fixed keys (--keys): the agents create the channel where their keys may,
// and a second run signs in with the same keys.
func TestURLWithFixedKeysCreatesTheChannel(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.Listen, cfg.RateLimit, cfg.AllowUnverifiedCreate = "127.0.0.1:0", 0, true
	srv, err := server.Start(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	keys := t.TempDir()
	var ids []string
	for range 2 {
		r, err := Run(context.Background(), Options{
			Agents: 5, URL: srv.URL(), Keys: keys, Spread: 200 * time.Millisecond, Binary: foremanBin, Seed: 1, Settle: -1,
		})
		require.NoError(t, err)
		assert.True(t, r.OK(), "every ACK arrives: %+v", r.AgentErrors)
		bot, err := agentchat.LoadIdentity(filepath.Join(keys, "foreman.json"))
		require.NoError(t, err)
		ids = append(ids, bot.AgentID())
	}
	assert.Equal(t, ids[0], ids[1], "the second run reuses foreman's key")
	entries, err := os.ReadDir(keys)
	require.NoError(t, err)
	assert.Len(t, entries, 6, "foreman's key and the five agents'")
}

// Against a server like a stock one (only verified keys create channels),
// whose admin has verified foreman's key, as the README has it for a stock
// server (its GENESIS_AGENT_ID): the agents join first, so foreman's key
// must have made the channel before they do.
func TestURLWhereOnlyForemansKeyMayCreateTheChannel(t *testing.T) {
	keys := t.TempDir()
	bot, _, err := agentchat.LoadOrCreateIdentity(filepath.Join(keys, "foreman.json"), "foreman")
	require.NoError(t, err)
	cfg := server.DefaultConfig()
	cfg.Listen, cfg.RateLimit, cfg.Verified = "127.0.0.1:0", 0, []string{bot.AgentID()}
	srv, err := server.Start(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })

	r, err := Run(context.Background(), Options{
		Agents: 3, URL: srv.URL(), Keys: keys, Spread: 200 * time.Millisecond, Binary: foremanBin, Seed: 1, Settle: -1,
	})
	require.NoError(t, err)
	assert.True(t, r.OK(), "every ACK arrives: %+v", r.AgentErrors)
}

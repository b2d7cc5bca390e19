package bot

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/otlp"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// claudeCodeExport is one export of Claude Code's events as its OTLP
// exporter sends it (protobuf): an api_request event with its cost and
// tokens, attributes as strings, for agent; seq tells one request from
// another (Claude Code's event.sequence), as foreman counts each request
// once however often an exporter sends it.
func claudeCodeExport(t testing.TB, agent string, seq int) []byte {
	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	now := uint64(time.Now().UnixNano())
	data := &logspb.LogsData{ResourceLogs: []*logspb.ResourceLogs{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "claude-code"),
			str("service.version", "2.1.0"), str(otlp.AgentAttribute, agent)}},
		ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{{
			TimeUnixNano: now, ObservedTimeUnixNano: now,
			Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "claude_code.api_request"}},
			Attributes: []*commonpb.KeyValue{str("event.name", "api_request"), str("session.id", "9f1c"), str("event.sequence", strconv.Itoa(seq)),
				str("model", "claude-sonnet-4-5"), str("cost_usd", "0.001"), str("duration_ms", "1830"),
				str("input_tokens", "80"), str("output_tokens", "20"), str("cache_read_tokens", "0"),
				str("cache_creation_tokens", "0")},
		}}}},
	}}}
	body, err := proto.Marshal(data)
	require.NoError(t, err)
	return body
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestSpendLoad replays a Claude Code export at SPEND_RATE exports a
// second for SPEND_SECONDS (small by default; make bench-spend runs 1,000
// for 60 s) through the OTLP receiver into a live foreman with a journal:
// every export is answered once journaled, none is dropped, and the spend
// the engine counted is exactly the exports' sum. It prints each export's
// latency (p50, p99, max); it asserts no speed.
func TestSpendLoad(t *testing.T) {
	rate, seconds := envInt("SPEND_RATE", 200), envInt("SPEND_SECONDS", 1)
	r := roomtest.Start(t)
	b1 := r.Join(t, "b1")
	id, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	cfg := fastConfig(t, r.URL(), t.TempDir(), coordinator.Component{Name: "db"})
	cfg.Rules.CheckinInterval = time.Hour
	b, stop := runBot(t, cfg, id)
	b1.Await(id.AgentID(), "TASKS db")
	b1.Say("CLAIM db")
	b1.Await(id.AgentID(), "ACK db "+b1.ID)

	// The senders below stand for SPEND_AGENTS agents' exporters, but
	// report with b1's one token (b1 holds the one component): the share
	// of one agent's exports in flight (MaxPerAgent, a defence against one
	// hostile agent among many: internal/otlp's flood tests) is theirs.
	agents := envInt("SPEND_AGENTS", 256)
	rec := otlp.New(otlp.Options{Tokens: map[string]string{"tok-b1": b1.ID}, MaxPerAgent: agents}, b)
	srv := httptest.NewServer(rec.Handler())
	defer srv.Close()
	total := rate * seconds
	bodies := make([][]byte, total)
	for i := range bodies {
		bodies[i] = claudeCodeExport(t, b1.ID, i)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}

	lat := make([]time.Duration, total)
	codes := make([]int, total)
	var wg sync.WaitGroup
	// At most SPEND_AGENTS exports in flight: each agent's exporter sends
	// one at a time. Unbounded, a stalled machine piled up connections
	// until the process ran out of files (20,000) and exports failed to
	// connect.
	inflight := make(chan struct{}, agents)
	send := func(i int) {
		defer wg.Done()
		defer func() { <-inflight }()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+otlp.LogsPath, bytes.NewReader(bodies[i]))
		req.Header.Set("Authorization", "Bearer tok-b1")
		req.Header.Set("Content-Type", "application/x-protobuf")
		began := time.Now()
		resp, err := client.Do(req)
		lat[i] = time.Since(began)
		if err == nil {
			codes[i] = resp.StatusCode
			resp.Body.Close()
		}
	}
	// Open loop: export i is sent at its time whatever the others do, as
	// agents' exporters would, unless every agent has one in flight.
	start := time.Now()
	for i := range total {
		if d := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))); d > 0 {
			time.Sleep(d)
		}
		inflight <- struct{}{}
		wg.Add(1)
		go send(i)
	}
	sendFor := time.Since(start)
	wg.Wait()
	ok := 0
	for _, c := range codes {
		if c == http.StatusOK {
			ok++
		}
	}
	assert.Equal(t, total, ok, "every export answered 200 (journaled)")
	v, err := b.View(t.Context())
	require.NoError(t, err)
	want := coordinator.Cost{USD: int64(total) * 1000, Tokens: int64(total) * 100}
	assert.Equal(t, want, v.Components[0].Spent, "none dropped, each counted once, on the component")
	require.NoError(t, stop())

	slices.Sort(lat)
	q := func(p float64) time.Duration {
		return lat[min(len(lat)-1, int(p*float64(len(lat))))].Round(10 * time.Microsecond)
	}
	fmt.Printf("spendbench: %d exports at %d/s for %d s by %d agents (sent in %.1f s): %d answered 200, spend $%.3f and %d tokens counted; latency p50 %v p99 %v max %v; journal commits %d\n",
		total, rate, seconds, cap(inflight), sendFor.Seconds(), ok, float64(v.Components[0].Spent.USD)/1e6, v.Components[0].Spent.Tokens,
		q(0.5), q(0.99), lat[len(lat)-1].Round(10*time.Microsecond), b.Health().Commits)
}

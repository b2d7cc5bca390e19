package otlp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/protocol"
)

// engineSink steps a real engine with what the receiver hands it, as the
// bot does on its goroutine.
type engineSink struct {
	mu   sync.Mutex
	e    *coordinator.Engine
	said []string
}

func (s *engineSink) Spend(_ context.Context, batch []coordinator.Spend) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sp := range batch {
		s.said = append(s.said, coordinator.Texts(s.e.Step(coordinator.Event{Kind: coordinator.KindSpend, At: time.Now(), Spend: sp}))...)
	}
	return nil
}

func (s *engineSink) hear(t *testing.T, from, line string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return coordinator.Texts(s.e.Step(coordinator.Heard(coordinator.Message{From: from, Verified: true, At: time.Now(), Content: line})))
}

func (s *engineSink) view() coordinator.View {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.e.View()
}

func newSink(t *testing.T) *engineSink {
	e, err := coordinator.New(coordinator.Config{Build: "shop", Self: "@foreman", Rules: coordinator.DefaultRules(),
		Components: []coordinator.Component{{Name: "api"}, {Name: "web"}}, Roles: coordinator.Roles{Operators: []string{"@op"}}})
	require.NoError(t, err)
	e.Step(coordinator.Event{Kind: coordinator.KindStart, At: time.Now().Add(-time.Second)})
	return &engineSink{e: e}
}

const tokB1, tokB2 = "tok-b1-0123456789", "tok-b2-0123456789"

func serve(t *testing.T, sink Sink, opts Options) (*Receiver, *httptest.Server) {
	if opts.Tokens == nil {
		opts.Tokens = map[string]string{tokB1: "@b1", tokB2: "@b2"}
	}
	r := New(opts, sink)
	srv := httptest.NewServer(r.Handler())
	t.Cleanup(srv.Close)
	return r, srv
}

// meter is Claude Code's metrics, exported by the Go SDK's OTLP/HTTP
// exporter (protobuf) to the receiver.
type meter struct {
	mp     *sdkmetric.MeterProvider
	cost   func(float64)
	tokens func(int64, string)
}

func newMeter(t *testing.T, url, token, agent string, temporality metricdata.Temporality, unit string) *meter {
	ctx := context.Background()
	exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(url+MetricsPath),
		otlpmetrichttp.WithHeaders(map[string]string{"Authorization": "Bearer " + token}),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false}),
		otlpmetrichttp.WithTemporalitySelector(func(sdkmetric.InstrumentKind) metricdata.Temporality { return temporality }))
	require.NoError(t, err)
	var attrs []attribute.KeyValue
	if agent != "" {
		attrs = append(attrs, attribute.String(AgentAttribute, agent))
	}
	res := resource.NewSchemaless(append(attrs, attribute.String("service.name", "claude-code"))...)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(time.Hour))))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	m := mp.Meter("com.anthropic.claude_code")
	cost, err := m.Float64Counter(costMetric, metricUnit(unit))
	require.NoError(t, err)
	tok, err := m.Int64Counter(tokenMetric, metricUnitInt("tokens"))
	require.NoError(t, err)
	session := attribute.String("session.id", "s1")
	return &meter{mp: mp,
		cost: func(v float64) {
			cost.Add(ctx, v, metricOpt(session, attribute.String("model", "claude-sonnet")))
		},
		tokens: func(v int64, typ string) {
			tok.Add(ctx, v, metricOptInt(session, attribute.String("type", typ)))
		}}
}

func (m *meter) flush(t *testing.T) error { return m.mp.ForceFlush(context.Background()) }

// Spend exported by the Go SDK lands on the component its agent held, in
// cumulative and in delta temporality; a component's budget holds it and
// BUDGET lets it go on.
func TestGoSDKExporter(t *testing.T) {
	for _, temp := range []metricdata.Temporality{metricdata.CumulativeTemporality, metricdata.DeltaTemporality} {
		t.Run(temp.String(), func(t *testing.T) {
			sink := newSink(t)
			_, srv := serve(t, sink, Options{})
			sink.hear(t, "@b1", "CLAIM api")
			sink.hear(t, "@op", "BUDGET api 1")
			m := newMeter(t, srv.URL, tokB1, "@b1", temp, "USD")
			m.cost(0.5)
			m.tokens(1200, "input")
			m.tokens(300, "output")
			require.NoError(t, m.flush(t))
			m.cost(0.25)
			require.NoError(t, m.flush(t))
			require.NoError(t, m.flush(t), "a flush with nothing new counts nothing again")
			v := sink.view()
			assert.Equal(t, coordinator.Cost{USD: 750_000, Tokens: 1500}, v.Components[0].Spent)
			assert.Empty(t, sink.said, "75% of the budget: nothing said yet")

			m.cost(0.30)
			require.NoError(t, m.flush(t))
			sink.mu.Lock()
			said := strings.Join(sink.said, "\n")
			sink.mu.Unlock()
			assert.Contains(t, said, "ESCALATE api budget api spent $1.05 of $1.00 (105%)")
			assert.Equal(t, "held", sink.view().Components[0].State)
			assert.Contains(t, sink.hear(t, "@op", "BUDGET api +1"), "ACK api @b1 budget set by @op: go on")
		})
	}
}

// An export without a valid token, from another agent's token, without
// the agent attribute, or in another unit, is refused and counted.
func TestRefusals(t *testing.T) {
	sink := newSink(t)
	r, srv := serve(t, sink, Options{})
	sink.hear(t, "@b1", "CLAIM api")
	for _, tc := range []struct {
		token, agent, unit string
		why                Refusal
	}{
		{"wrong", "@b1", "USD", RefusedToken},
		{"", "@b1", "USD", RefusedToken},
		{tokB2, "@b1", "USD", RefusedAgent},
		{tokB1, "", "USD", RefusedAgent},
		{tokB1, "@b1", "EUR", RefusedUnit},
	} {
		before := r.Counts().Refused[tc.why]
		m := newMeter(t, srv.URL, tc.token, tc.agent, metricdata.CumulativeTemporality, tc.unit)
		m.cost(1)
		assert.Error(t, m.flush(t), "%+v", tc)
		assert.Equal(t, before+1, r.Counts().Refused[tc.why], "%+v", tc)
	}
	assert.True(t, sink.view().Spent.IsZero(), "nothing refused was counted")
}

// A 100 MB body is refused without being read: declared, at once; sent
// without a length, after the limit.
func TestBodyLimit(t *testing.T) {
	sink := newSink(t)
	r, srv := serve(t, sink, Options{MaxBody: 1 << 20})
	for _, declared := range []bool{true, false} {
		body := &countingReader{n: 100 << 20}
		req, err := http.NewRequest(http.MethodPost, srv.URL+MetricsPath, body)
		require.NoError(t, err)
		if declared {
			req.ContentLength = 100 << 20
		} else {
			req.ContentLength = -1
		}
		req.Header.Set("Authorization", "Bearer "+tokB1)
		req.Header.Set("Content-Type", "application/x-protobuf")
		resp, err := http.DefaultClient.Do(req)
		if err == nil { // the server may close before the client has sent all
			assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
			resp.Body.Close()
		}
		assert.Less(t, body.read.Load(), int64(10<<20), "declared=%v: the body is not read through", declared)
	}
	assert.EqualValues(t, 2, r.Counts().Refused[RefusedBody])
}

type countingReader struct {
	n    int64
	read atomicInt
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.read.Load() >= c.n {
		return 0, io.EOF
	}
	k := min(int64(len(p)), c.n-c.read.Load())
	c.read.Add(k)
	return int(k), nil
}

// Claude Code's api_request event, as its JSON exporter sends it (times
// in nanoseconds as strings, attributes as strings): placed by its own
// time, counted exactly, and its metrics no longer count.
func TestRequestEventJSON(t *testing.T) {
	sink := newSink(t)
	_, srv := serve(t, sink, Options{})
	sink.hear(t, "@b1", "CLAIM api")
	ns := time.Now().UnixNano()
	body := `{"resourceLogs":[{"resource":{"attributes":[{"key":"foreman.agent","value":{"stringValue":"@b1"}}]},
	"scopeLogs":[{"scope":{"name":"com.anthropic.claude_code.events"},"logRecords":[
	{"timeUnixNano":"` + itoa(ns) + `","body":{"stringValue":"claude_code.api_request"},"attributes":[
	 {"key":"event.name","value":{"stringValue":"api_request"}},
	 {"key":"cost_usd","value":{"stringValue":"0.012345"}},
	 {"key":"input_tokens","value":{"stringValue":"1000"}},
	 {"key":"output_tokens","value":{"stringValue":"200"}},
	 {"key":"cache_read_tokens","value":{"intValue":"30"}},
	 {"key":"cache_creation_tokens","value":{"stringValue":"4"}}]},
	{"timeUnixNano":"` + itoa(ns) + `","body":{"stringValue":"claude_code.user_prompt"},"attributes":[{"key":"event.name","value":{"stringValue":"user_prompt"}}]}
	]}]}]}`
	resp := post(t, srv.URL+LogsPath, tokB1, "application/json", body)
	assert.Equal(t, http.StatusOK, resp)
	assert.Equal(t, coordinator.Cost{USD: 12345, Tokens: 1234}, sink.view().Components[0].Spent)
}

func post(t *testing.T, url, token, ct, body string) int {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", ct)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Logf("%d %s", resp.StatusCode, msg)
	}
	return resp.StatusCode
}

func itoa(n int64) string { return protocol.FormatTokens(n)[:len(protocol.FormatTokens(n))-1] }

// With a secret, an agent's token is made from it: the attribute names
// the agent, the token proves it; another agent's token, or a made-up
// one, is refused.
func TestSecretTokens(t *testing.T) {
	sink := newSink(t)
	secret := []byte("0123456789abcdef0123456789abcdef")
	r, srv := serve(t, sink, Options{Tokens: map[string]string{}, Secret: secret})
	sink.hear(t, "@b1", "CLAIM api")
	ok := newMeter(t, srv.URL, Token(secret, "@b1"), "@b1", metricdata.DeltaTemporality, "USD")
	ok.cost(0.5)
	require.NoError(t, ok.flush(t))
	for _, tc := range []struct{ token, agent string }{{Token(secret, "@b2"), "@b1"}, {"made-up", "@b1"}, {Token(secret, "@b1"), ""}} {
		m := newMeter(t, srv.URL, tc.token, tc.agent, metricdata.DeltaTemporality, "USD")
		m.cost(1)
		assert.Error(t, m.flush(t), "%+v", tc)
	}
	assert.Equal(t, coordinator.Cost{USD: 500_000}, sink.view().Components[0].Spent)
	assert.EqualValues(t, 1, r.Counts().Refused[RefusedToken], "the made-up one")
	assert.EqualValues(t, 2, r.Counts().Refused[RefusedAgent], "@b2's token naming @b1, and none named")
	assert.NotEqual(t, Token(secret, "@b1"), Token([]byte("another secret, another foreman"), "@b1"))
}

// A token that is no agent's is refused before a byte of the body is
// read: nobody without one costs foreman the reading and parsing of an
// export (a few KiB of gzip can unpack to megabytes that parse into far
// more).
func TestNoBodyIsReadWithoutAToken(t *testing.T) {
	sink := newSink(t)
	secret := []byte("0123456789abcdef0123456789abcdef")
	r, _ := serve(t, sink, Options{Tokens: map[string]string{}, Secret: secret})
	forged := "@b1." + strings.Repeat("0", 32)
	for _, tok := range []string{"", "made-up", forged, Token([]byte("another secret, another foreman"), "@b1")} {
		body := &countingReader{n: 1 << 20}
		req := httptest.NewRequest(http.MethodPost, "/v1/metrics", body)
		req.Header.Set("Content-Type", "application/x-protobuf")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		w := httptest.NewRecorder()
		r.Handler().ServeHTTP(w, req)
		assert.Equal(t, http.StatusUnauthorized, w.Code, "token %q", tok)
		assert.Zero(t, body.read.Load(), "token %q: the body was read", tok)
	}
}

func TestLoadSecret(t *testing.T) {
	path := t.TempDir() + "/otlp/secret"
	a, err := LoadSecret(path)
	require.NoError(t, err)
	b, err := LoadSecret(path)
	require.NoError(t, err)
	assert.Equal(t, a, b, "made once, then read")
	require.NoError(t, os.WriteFile(path, []byte("short"), 0o600))
	_, err = LoadSecret(path)
	assert.ErrorContains(t, err, "at least 16")
}

// The environment an agent started by hand (or by foreman up) needs: the
// exporter of Claude Code to foreman's listener, its token and name, and
// intervals short enough for the overshoot bound.
func TestEnv(t *testing.T) {
	env := Env("http://127.0.0.1:9090/", "@b1", "tok")
	assert.Contains(t, env, "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:9090")
	assert.Contains(t, env, "OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer tok")
	assert.Contains(t, env, "OTEL_RESOURCE_ATTRIBUTES=foreman.agent=@b1")
	assert.Contains(t, env, "OTEL_METRIC_EXPORT_INTERVAL=5000")
	assert.Contains(t, env, "OTEL_LOGS_EXPORT_INTERVAL=5000")
	assert.Contains(t, env, "CLAUDE_CODE_ENABLE_TELEMETRY=1")
}

type blockingSink struct {
	entered chan struct{}
	release chan struct{}
}

func (b *blockingSink) Spend(ctx context.Context, _ []coordinator.Spend) error {
	b.entered <- struct{}{}
	<-b.release
	return nil
}

// A flood holds no more than MaxInFlight exports waiting for the engine:
// one more is answered 503 at once (the exporter sends it again), and
// counted busy; those waiting are taken.
func TestFloodIsBounded(t *testing.T) {
	sink := &blockingSink{entered: make(chan struct{}, 2), release: make(chan struct{})}
	r, srv := serve(t, sink, Options{MaxInFlight: 2})
	ns := time.Now().UnixNano()
	body := `{"resourceLogs":[{"resource":{"attributes":[{"key":"foreman.agent","value":{"stringValue":"@b1"}}]},"scopeLogs":[{"logRecords":[{"timeUnixNano":"` + itoa(ns) + `","attributes":[{"key":"event.name","value":{"stringValue":"api_request"}},{"key":"cost_usd","value":{"doubleValue":0.01}}]}]}]}]}`
	codes := make(chan int, 2)
	for range 2 {
		go func() { codes <- post(t, srv.URL+LogsPath, tokB1, "application/json", body) }()
	}
	<-sink.entered
	<-sink.entered
	assert.Equal(t, http.StatusServiceUnavailable, post(t, srv.URL+LogsPath, tokB1, "application/json", body))
	assert.EqualValues(t, 1, r.Counts().Refused[RefusedBusy])
	close(sink.release)
	assert.Equal(t, http.StatusOK, <-codes)
	assert.Equal(t, http.StatusOK, <-codes)
}

// postBody posts an export and returns the answer's status and body.
func postBody(t *testing.T, url, body string) (int, string) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tokB1)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	msg, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(msg)
}

// requestsJSON is an export of n api_request events of usd each, @b1's.
func requestsJSON(ns int64, n int, usd string) string {
	var b strings.Builder
	b.WriteString(`{"resourceLogs":[{"resource":{"attributes":[{"key":"foreman.agent","value":{"stringValue":"@b1"}}]},"scopeLogs":[{"logRecords":[`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"timeUnixNano":"%d","attributes":[{"key":"event.name","value":{"stringValue":"api_request"}},{"key":"event.sequence","value":{"intValue":"%d"}},{"key":"cost_usd","value":{"stringValue":"%s"}}]}`, ns, i, usd)
	}
	b.WriteString(`]}]}]}`)
	return b.String()
}

// sumJSON is an export of one cost point of @b1's, in temporality temp
// (1 delta, 2 cumulative), from start to end (nanoseconds).
func sumJSON(temp int, start, end int64, usd float64) string {
	return fmt.Sprintf(`{"resourceMetrics":[{"resource":{"attributes":[{"key":"foreman.agent","value":{"stringValue":"@b1"}}]},"scopeMetrics":[{"metrics":[{"name":"claude_code.cost.usage","unit":"USD","sum":{"aggregationTemporality":%d,"isMonotonic":true,"dataPoints":[{"startTimeUnixNano":"%d","timeUnixNano":"%d","asDouble":%g,"attributes":[{"key":"session.id","value":{"stringValue":"s1"}}]}]}}]}]}]}`, temp, start, end, usd)
}

// One export costs the engine at most MaxPoints steps: the points past
// it are refused, counted, and the answer says so and what to do.
func TestOneExportIsBounded(t *testing.T) {
	sink := newSink(t)
	r, srv := serve(t, sink, Options{})
	sink.hear(t, "@b1", "CLAIM api")
	code, body := postBody(t, srv.URL+LogsPath, requestsJSON(time.Now().UnixNano(), DefaultMaxPoints+1000, "0.001"))
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"rejectedLogRecords":"1000"`)
	assert.Contains(t, body, "1000 points past the limit of 1024 an export: export more often")
	assert.Equal(t, coordinator.Cost{USD: DefaultMaxPoints * 1000}, sink.view().Spent, "1024 requests of $0.001")
	assert.EqualValues(t, 1000, r.Counts().Refused[RefusedExcess])
	assert.EqualValues(t, DefaultMaxPoints, r.Counts().Points)
}

// An exporter that sends an export again (its answer was lost) costs
// nothing more: requests, deltas and cumulative points alike, and a
// cumulative point retried after a later one.
func TestRetriedExportsCountOnce(t *testing.T) {
	sink := newSink(t)
	_, srv := serve(t, sink, Options{})
	sink.hear(t, "@b1", "CLAIM api")
	start := time.Now().UnixNano() // the points are a few seconds ahead: placed as received
	for _, step := range []struct {
		path, body string
		spent      int64
	}{
		{MetricsPath, sumJSON(2, start, start+1e9, 0.5), 500_000},
		{MetricsPath, sumJSON(2, start, start+2e9, 0.75), 750_000},
		{MetricsPath, sumJSON(2, start, start+1e9, 0.5), 750_000}, // the first, retried late
		{MetricsPath, sumJSON(1, start+2e9, start+3e9, 0.25), 1_000_000},
		{MetricsPath, sumJSON(1, start+2e9, start+3e9, 0.25), 1_000_000},
		{MetricsPath, sumJSON(1, start+3e9, start+4e9, 0.25), 1_250_000},
		{LogsPath, requestsJSON(start+5e9, 2, "0.5"), 2_250_000}, // from here requests, not metrics
		{LogsPath, requestsJSON(start+5e9, 2, "0.5"), 2_250_000},
	} {
		code, _ := postBody(t, srv.URL+step.path, step.body)
		require.Equal(t, http.StatusOK, code)
		assert.Equal(t, coordinator.Cost{USD: step.spent}, sink.view().Components[0].Spent, step.body)
	}
}

// One point adds at most coordinator.MaxPoint: a larger one is refused
// and counted, and the answer says the limit.
func TestTooLargeAPointIsRefused(t *testing.T) {
	sink := newSink(t)
	r, srv := serve(t, sink, Options{})
	sink.hear(t, "@b1", "CLAIM api")
	now := time.Now().UnixNano()
	code, body := postBody(t, srv.URL+LogsPath, requestsJSON(now, 1, "1000000000000"))
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "a point adds at most $1000.00 or 100000000 tokens")
	code, _ = postBody(t, srv.URL+MetricsPath, sumJSON(1, now-1e9, now, 5000))
	assert.Equal(t, http.StatusOK, code)
	assert.True(t, sink.view().Spent.IsZero())
	assert.EqualValues(t, 2, r.Counts().Refused[RefusedPoint])
}

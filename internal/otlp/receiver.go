// Package otlp receives what agents spend over OTLP/HTTP (issue 47): the
// metrics and log events an agent's OpenTelemetry exporter sends, as
// protobuf or JSON, on foreman's HTTP listener. It only reads: it checks
// who sent an export, turns the points it knows into coordinator.Spend
// and hands them to the engine (through a Sink), which decides what they
// count to. It keeps no spend of its own, so a restart of foreman loses
// nothing the journal has.
//
// What it reads: Claude Code's claude_code.cost.usage (USD) and
// claude_code.token.usage (tokens) metrics, cumulative or delta; its
// api_request log event, with each request's cost and tokens; and the
// GenAI semantic conventions' gen_ai.client.token.usage. The data model
// is the OpenTelemetry project's own (go.opentelemetry.io/proto/otlp).
package otlp

import (
	"compress/gzip"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/protocol"
)

// AgentAttribute is the resource attribute that names the agent an export
// comes from: its sender id in the room.
const AgentAttribute = "foreman.agent"

// The paths OTLP/HTTP exporters post to.
const (
	MetricsPath = "/v1/metrics"
	LogsPath    = "/v1/logs"
)

// DefaultMaxInFlight bounds the exports in flight at once: being read,
// parsed or waiting for the engine.
const DefaultMaxInFlight = 1024

// DefaultMaxPerAgent bounds one agent's exports in flight at once, so
// that one agent's flood leaves the others room. An exporter sends one
// export at a time; a few more are retries and the metrics and the logs
// of one agent.
const DefaultMaxPerAgent = 4

// DefaultReadTimeout bounds the time an export's body takes to come: a
// few kilobytes on the loopback.
const DefaultReadTimeout = 10 * time.Second

// DefaultMaxPoints bounds the spend points taken from one export: each
// is a step of the engine, and a body of DefaultMaxBody could hold a
// hundred thousand. A Claude Code export holds a few per session and
// model (its metrics), or the requests of one export interval (its
// events).
const DefaultMaxPoints = 1024

// DefaultMaxBody bounds an export's body, before and after gzip. A
// Claude Code export is a few kilobytes.
const DefaultMaxBody = 4 << 20

// Sink takes the spend of one export to the engine. An error means the
// engine could not take it now (the build has not started, foreman is
// catching up): the exporter is asked to send it again.
type Sink interface {
	Spend(ctx context.Context, batch []coordinator.Spend) error
}

// Options configure a Receiver.
type Options struct {
	// Tokens names the agents that may report, each by its token (the
	// bearer token its exporter sends). An export from anyone else is
	// refused.
	Tokens map[string]string // token -> agent id
	// Secret, if set, makes every agent's token (Token): an export is
	// taken from the agent its foreman.agent attribute names when its
	// token is Token(Secret, that agent).
	Secret  []byte
	MaxBody int64 // 0: DefaultMaxBody
	// MaxPoints bounds the spend points taken from one export; the rest
	// are refused (RefusedExcess) in the answer's partial success, which
	// says to export more often. 0: DefaultMaxPoints.
	MaxPoints int
	// MaxInFlight bounds the exports in flight at once, from the token
	// check on: being read, parsed or waiting for the engine. One more is
	// answered 503 before a byte of its body is read (the exporter sends
	// it again), so a flood holds no more than this many bodies, each at
	// most MaxBody (and MaxBody again gunzipped). 0: DefaultMaxInFlight.
	MaxInFlight int
	// MaxPerAgent bounds one agent's exports in flight (by the agent its
	// token names); one more is answered 429, so that an agent's flood
	// cannot take every slot from the others. 0: DefaultMaxPerAgent.
	MaxPerAgent int
	// ReadTimeout bounds the time an export's body takes to come, so a
	// body that trickles in cannot hold its slot. 0: DefaultReadTimeout.
	ReadTimeout time.Duration
	Now         func() time.Time // for points without a time; nil: time.Now
}

// Refusal says why an export, or a point of one, was not taken. Each is
// counted (Counts).
type Refusal int

// The refusals.
const (
	RefusedToken  Refusal = iota // no token, or one no agent has
	RefusedAgent                 // no foreman.agent attribute, or another agent's
	RefusedUnit                  // a spend metric in a unit other than USD or tokens
	RefusedBody                  // too large, not OTLP, or an unknown content type
	RefusedPoint                 // a point without temporality, or a negative, non-finite or too large value
	RefusedBusy                  // the engine could not take it now: sent again by the exporter
	RefusedExcess                // a point past MaxPoints of one export
	RefusedShare                 // an agent with MaxPerAgent exports in flight already
	numRefusals
)

var refusalNames = [numRefusals]string{"token", "agent", "unit", "body", "point", "busy", "excess", "share"}

func (r Refusal) String() string { return refusalNames[r] }

// Refusals lists every refusal, for metrics.
func Refusals() []Refusal {
	out := make([]Refusal, numRefusals)
	for i := range out {
		out[i] = Refusal(i)
	}
	return out
}

// Receiver serves OTLP/HTTP exports of spend.
type Receiver struct {
	opts    Options
	tokens  map[[32]byte]string
	sink    Sink
	refused [numRefusals]atomic.Int64
	slots   chan struct{} // one per export in flight
	exports atomic.Int64
	points  atomic.Int64

	mu        sync.Mutex
	inFlight  map[string]int // by agent; an agent is here while it has one
	reading   atomic.Int64   // bodies being read now
	onRead    func()         // tests: called as a body starts to be read
	onRelease func()         // tests: called as an export gives its slot back
}

// New makes a receiver that hands spend to sink.
func New(opts Options, sink Sink) *Receiver {
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.MaxPoints <= 0 {
		opts.MaxPoints = DefaultMaxPoints
	}
	if opts.MaxPerAgent <= 0 {
		opts.MaxPerAgent = DefaultMaxPerAgent
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = DefaultReadTimeout
	}
	r := &Receiver{opts: opts, sink: sink, tokens: make(map[[32]byte]string, len(opts.Tokens)),
		slots: make(chan struct{}, opts.MaxInFlight), inFlight: map[string]int{}}
	for tok, agent := range opts.Tokens {
		r.tokens[sha256.Sum256([]byte(tok))] = agent // looked up by hash: no early exit on a matching prefix
	}
	return r
}

// Counts are the receiver's counters.
type Counts struct {
	Exports  int64              // exports taken
	Points   int64              // spend points handed to the engine
	Refused  [numRefusals]int64 // by Refusal
	InFlight int64              // exports in flight now (at most MaxInFlight)
	Reading  int64              // of them, bodies being read now
}

// Counts returns the counters; safe from any goroutine.
func (r *Receiver) Counts() Counts {
	c := Counts{Exports: r.exports.Load(), Points: r.points.Load(), InFlight: int64(len(r.slots)), Reading: r.reading.Load()}
	for i := range c.Refused {
		c.Refused[i] = r.refused[i].Load()
	}
	return c
}

// Handler serves POST /v1/metrics and POST /v1/logs.
func (r *Receiver) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+MetricsPath, func(w http.ResponseWriter, req *http.Request) { r.serve(w, req, false) })
	mux.HandleFunc("POST "+LogsPath, func(w http.ResponseWriter, req *http.Request) { r.serve(w, req, true) })
	return mux
}

// httpError is a refusal with its status and one line that says what to
// change.
type httpError struct {
	status int
	why    Refusal
	msg    string
	retry  bool // the exporter is to send it again: Retry-After
}

func (e *httpError) Error() string { return e.msg }

func refuse(status int, why Refusal, format string, args ...any) *httpError {
	return &httpError{status: status, why: why, msg: fmt.Sprintf(format, args...)}
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request, logs bool) {
	jsonBody, agent, err := r.check(req)
	var batch []coordinator.Spend
	var rejected answer
	read := false
	if err == nil {
		// The slots are taken before a byte of the body is read: what a
		// flood holds is bounded by them, not by the connections it opens.
		var release func()
		if release, err = r.admit(agent); err == nil {
			defer release()
			var body []byte
			body, err = r.read(w, req)
			read = err == nil
			if err == nil {
				batch, rejected, err = r.parse(body, jsonBody, logs, r.authority(agent))
			}
			if err == nil && len(batch) > 0 {
				if serr := r.sink.Spend(req.Context(), batch); serr != nil {
					err = &httpError{status: http.StatusServiceUnavailable, why: RefusedBusy, retry: true,
						msg: fmt.Sprintf("foreman cannot count spend now (%v); send it again", serr)}
				}
			}
		}
	}
	var he *httpError
	if errors.As(err, &he) {
		r.refused[he.why].Add(1)
		if he.retry {
			w.Header().Set("Retry-After", "1")
		}
		if !read {
			// The rest of the body is not waited for: the server would
			// otherwise read it after the answer, for as long as it trickles.
			w.Header().Set("Connection", "close")
		}
		http.Error(w, he.msg, he.status)
		return
	}
	r.exports.Add(1)
	r.points.Add(int64(len(batch)))
	if jsonBody {
		w.Header().Set("Content-Type", "application/json")
	} else {
		w.Header().Set("Content-Type", "application/x-protobuf")
	}
	w.WriteHeader(http.StatusOK)
	w.Write(response(rejected, jsonBody, logs))
}

// admit takes a slot for agent's export, and one of agent's share, or
// refuses at once: it never waits, so nothing queues behind a full
// receiver. release gives both back.
func (r *Receiver) admit(agent string) (release func(), err error) {
	select {
	case r.slots <- struct{}{}:
	default:
		return nil, &httpError{status: http.StatusServiceUnavailable, why: RefusedBusy, retry: true,
			msg: fmt.Sprintf("%d exports are in flight already; send it again", cap(r.slots))}
	}
	r.mu.Lock()
	if r.inFlight[agent] >= r.opts.MaxPerAgent {
		r.mu.Unlock()
		<-r.slots
		return nil, &httpError{status: http.StatusTooManyRequests, why: RefusedShare, retry: true,
			msg: fmt.Sprintf("%s has %d exports in flight already, its share: send one at a time", agent, r.opts.MaxPerAgent)}
	}
	r.inFlight[agent]++
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		if r.inFlight[agent]--; r.inFlight[agent] == 0 {
			delete(r.inFlight, agent)
		}
		r.mu.Unlock()
		<-r.slots
		if r.onRelease != nil {
			r.onRelease()
		}
	}, nil
}

// check refuses what can be refused before reading the body: no valid
// token, a content type that is not OTLP's, a body declared too large.
func (r *Receiver) check(req *http.Request) (jsonBody bool, agent string, err error) {
	if agent = r.agentOf(req); agent == "" {
		return false, "", refuse(http.StatusUnauthorized, RefusedToken, "no valid token: send Authorization: Bearer <the agent's token> (foreman mcp --print-config prints it)")
	}
	switch ct, _, _ := strings.Cut(req.Header.Get("Content-Type"), ";"); strings.TrimSpace(ct) {
	case "application/x-protobuf":
	case "application/json":
		jsonBody = true
	default:
		return false, "", refuse(http.StatusUnsupportedMediaType, RefusedBody, "content type %q: send application/x-protobuf or application/json (OTLP/HTTP)", ct)
	}
	if req.ContentLength > r.opts.MaxBody {
		return false, "", refuse(http.StatusRequestEntityTooLarge, RefusedBody, "a body of %d bytes is over the limit of %d: export more often", req.ContentLength, r.opts.MaxBody)
	}
	return jsonBody, agent, nil
}

func bearer(req *http.Request) string {
	tok, _ := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	return strings.TrimSpace(tok)
}

// agentOf is the agent the request's token is for, "" if it is no
// agent's: known before a byte of the body is read, so that nobody
// without a token costs foreman the reading and parsing of one.
func (r *Receiver) agentOf(req *http.Request) string {
	tok := bearer(req)
	if tok == "" {
		return ""
	}
	if agent := r.tokens[sha256.Sum256([]byte(tok))]; agent != "" {
		return agent
	}
	if r.opts.Secret == nil {
		return ""
	}
	agent, _, ok := strings.Cut(tok, ".")
	if !ok || agent == "" || !hmac.Equal([]byte(Token(r.opts.Secret, agent)), []byte(tok)) {
		return ""
	}
	return agent
}

// authority decides, from the agent a resource names, whose spend the
// export is: the token's agent, who must be the one named.
func (r *Receiver) authority(agent string) func(named string) (string, error) {
	return func(named string) (string, error) { return agent, checkAgent(named, agent) }
}

// Token is agent's token under secret: what its exporter sends as
// Authorization: Bearer. It names the agent (agent.mac), so that the
// receiver knows whose it is, and that it holds, before it reads the body.
func Token(secret []byte, agent string) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("foreman otlp token\x00" + agent))
	return agent + "." + hex.EncodeToString(mac.Sum(nil))[:32]
}

// read reads the body, at most MaxBody bytes of it, gunzipped if it came
// so (and then at most MaxBody once unzipped), within ReadTimeout.
func (r *Receiver) read(w http.ResponseWriter, req *http.Request) ([]byte, error) {
	r.reading.Add(1)
	defer r.reading.Add(-1)
	if r.onRead != nil {
		r.onRead()
	}
	// The board's server has no ReadTimeout (its live streams and sign-ins
	// are long requests): the deadline is the body's alone, and lifted
	// once it is read, so the wait for the engine is not cut by it. A
	// writer that cannot (a test's recorder) has no connection to hold.
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(r.opts.ReadTimeout)); err == nil {
		defer rc.SetReadDeadline(time.Time{})
	}
	var body io.Reader = http.MaxBytesReader(w, req.Body, r.opts.MaxBody)
	switch enc := req.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(body)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, refuse(http.StatusRequestTimeout, RefusedBody, "the body did not come within %v: send an export at once", r.opts.ReadTimeout)
		}
		if err != nil {
			return nil, refuse(http.StatusBadRequest, RefusedBody, "Content-Encoding gzip, but the body is not gzip: %v", err)
		}
		body = io.LimitReader(zr, r.opts.MaxBody+1)
	default:
		return nil, refuse(http.StatusUnsupportedMediaType, RefusedBody, "Content-Encoding %q: send gzip or none", enc)
	}
	data, err := io.ReadAll(body)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) || int64(len(data)) > r.opts.MaxBody {
		return nil, refuse(http.StatusRequestEntityTooLarge, RefusedBody, "the body is over the limit of %d bytes: export more often", r.opts.MaxBody)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, refuse(http.StatusRequestTimeout, RefusedBody, "the body did not come within %v: send an export at once", r.opts.ReadTimeout)
	}
	if err != nil {
		return nil, refuse(http.StatusBadRequest, RefusedBody, "reading the body: %v", err)
	}
	return data, nil
}

var jsonOpts = protojson.UnmarshalOptions{DiscardUnknown: true}

// parse reads an export. Its resources must each name the token's agent.
// It returns the spend found and how many points were refused.
func (r *Receiver) parse(body []byte, jsonBody, logs bool, auth func(named string) (string, error)) ([]coordinator.Spend, answer, error) {
	unmarshal := proto.Unmarshal
	if jsonBody {
		unmarshal = jsonOpts.Unmarshal
	}
	// MetricsData and LogsData are, on the wire and in JSON, the export
	// requests of OTLP's collector service, without its gRPC stubs.
	if logs {
		var data logspb.LogsData
		if err := unmarshal(body, &data); err != nil {
			return nil, answer{}, refuse(http.StatusBadRequest, RefusedBody, "not an OTLP logs export: %v", err)
		}
		var agent string
		for _, rl := range data.ResourceLogs {
			var err error
			if agent, err = oneAgent(agent, rl.Resource, auth); err != nil {
				return nil, answer{}, err
			}
		}
		p := parser{agent: agent, now: r.opts.Now(), max: r.opts.MaxPoints}
		for _, rl := range data.ResourceLogs {
			for _, sl := range rl.ScopeLogs {
				for _, lr := range sl.LogRecords {
					p.logRecord(lr)
				}
			}
		}
		return p.done(r)
	}
	var data metricspb.MetricsData
	if err := unmarshal(body, &data); err != nil {
		return nil, answer{}, refuse(http.StatusBadRequest, RefusedBody, "not an OTLP metrics export: %v", err)
	}
	var agent string
	for _, rm := range data.ResourceMetrics {
		var err error
		if agent, err = oneAgent(agent, rm.Resource, auth); err != nil {
			return nil, answer{}, err
		}
	}
	p := parser{agent: agent, now: r.opts.Now(), max: r.opts.MaxPoints}
	for _, rm := range data.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				p.metric(m)
			}
		}
	}
	return p.done(r)
}

// oneAgent is the agent res names, as auth allows it; every resource of
// an export must be the same agent's.
func oneAgent(before string, res *resourcepb.Resource, auth func(string) (string, error)) (string, error) {
	named := ""
	for _, kv := range res.GetAttributes() {
		if kv.GetKey() == AgentAttribute {
			named = kv.GetValue().GetStringValue()
		}
	}
	agent, err := auth(named)
	if err == nil && before != "" && agent != before {
		err = refuse(http.StatusForbidden, RefusedAgent, "an export names %s and %s: one agent an export", before, agent)
	}
	return agent, err
}

// checkAgent refuses a resource that does not name the token's agent: a
// token spends for its own agent only.
func checkAgent(named, agent string) error {
	switch {
	case named == "":
		return refuse(http.StatusBadRequest, RefusedAgent, "no %s resource attribute: set OTEL_RESOURCE_ATTRIBUTES=%s=%s", AgentAttribute, AgentAttribute, agent)
	case named != agent:
		return refuse(http.StatusForbidden, RefusedAgent, "%s=%s, but the token is %s's: each agent reports with its own token", AgentAttribute, protocol.CleanWord(named, protocol.MaxName), agent)
	}
	return nil
}

// parser turns the points of one export into spend.
type parser struct {
	agent    string
	now      time.Time
	out      []coordinator.Spend
	max      int    // points taken at most
	rejected int64  // bad points
	excess   int64  // points past max
	unit     string // a spend metric's unit that is neither USD nor tokens
}

// answer is what an export's answer says was not taken.
type answer struct{ rejected, excess, max int64 }

func (p *parser) done(r *Receiver) ([]coordinator.Spend, answer, error) {
	if p.unit != "" && len(p.out) == 0 {
		return nil, answer{}, refuse(http.StatusBadRequest, RefusedUnit, "spend in %q: foreman counts USD and tokens only", protocol.CleanText(p.unit, 40))
	}
	if p.unit != "" {
		r.refused[RefusedUnit].Add(1)
	}
	if p.rejected > 0 {
		r.refused[RefusedPoint].Add(p.rejected)
	}
	if p.excess > 0 {
		r.refused[RefusedExcess].Add(p.excess)
	}
	return p.out, answer{rejected: p.rejected, excess: p.excess, max: int64(p.max)}, nil
}

// add takes a point, unless the export has given max already.
func (p *parser) add(s coordinator.Spend) {
	if len(p.out) >= p.max {
		p.excess++
		return
	}
	p.out = append(p.out, s)
}

// The metrics read, and what they count.
const (
	costMetric       = "claude_code.cost.usage"
	tokenMetric      = "claude_code.token.usage"
	genAITokenMetric = "gen_ai.client.token.usage"
)

func (p *parser) metric(m *metricspb.Metric) {
	name := m.GetName()
	var tokens bool
	switch name {
	case costMetric:
		if m.GetUnit() != "USD" {
			p.unit = m.GetUnit()
			return
		}
	case tokenMetric, genAITokenMetric:
		switch m.GetUnit() {
		case "tokens", "{token}", "token", "{tokens}":
		default:
			p.unit = m.GetUnit()
			return
		}
		tokens = true
	default:
		return // not spend
	}
	if s := m.GetSum(); s != nil {
		for _, dp := range s.DataPoints {
			v, ok := numberValue(dp)
			p.point(name, s.AggregationTemporality, dp.Attributes, dp.StartTimeUnixNano, dp.TimeUnixNano, v, ok, tokens)
		}
	}
	if h := m.GetHistogram(); h != nil { // GenAI token usage: the sum of the recorded counts
		for _, dp := range h.DataPoints {
			p.point(name, h.AggregationTemporality, dp.Attributes, dp.StartTimeUnixNano, dp.TimeUnixNano, dp.GetSum(), dp.Sum != nil, tokens)
		}
	}
}

func numberValue(dp *metricspb.NumberDataPoint) (float64, bool) {
	switch v := dp.Value.(type) {
	case *metricspb.NumberDataPoint_AsDouble:
		return v.AsDouble, true
	case *metricspb.NumberDataPoint_AsInt:
		return float64(v.AsInt), true
	}
	return 0, false
}

func (p *parser) point(name string, temp metricspb.AggregationTemporality, attrs []*commonpb.KeyValue, start, at uint64, v float64, ok, tokens bool) {
	cost, good := toCost(v, tokens)
	if !ok || !good {
		p.rejected++
		return
	}
	// A delta names its series too: its end, against the series' last,
	// tells a retry from the next interval (coordinator/spend.go).
	s := coordinator.Spend{Agent: p.agent, At: p.time(at), Series: seriesKey(name, attrs), Start: fromNanos(start), Cost: cost}
	switch temp {
	case metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA:
		s.Source = coordinator.SpendDelta
		if !withinPoint(cost) {
			p.rejected++
			return
		}
	case metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE:
		s.Source = coordinator.SpendCumulative // a sum: the engine bounds what it grew by
	default:
		p.rejected++
		return
	}
	p.add(s)
}

// withinPoint reports whether c is no more than one point may add
// (coordinator.MaxPoint); the engine refuses more all the same.
func withinPoint(c coordinator.Cost) bool {
	return c.USD <= coordinator.MaxPoint.USD && c.Tokens <= coordinator.MaxPoint.Tokens
}

func toCost(v float64, tokens bool) (coordinator.Cost, bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1e12 {
		return coordinator.Cost{}, false
	}
	if tokens {
		return coordinator.Cost{Tokens: int64(math.Round(v))}, true
	}
	return coordinator.Cost{USD: int64(math.Round(v * protocol.Micro))}, true
}

// seriesKey names a cumulative series: the metric and a digest of its
// attributes (session, model, token type), so a key is short and the same
// for the same series whatever order the attributes come in.
func seriesKey(name string, attrs []*commonpb.KeyValue) string {
	kvs := make([]string, 0, len(attrs))
	for _, kv := range attrs {
		kvs = append(kvs, kv.GetKey()+"="+anyString(kv.GetValue()))
	}
	slices.Sort(kvs)
	sum := sha256.Sum256([]byte(strings.Join(kvs, "\x00")))
	return fmt.Sprintf("%s#%x", name, sum[:8])
}

func anyString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	}
	return ""
}

func (p *parser) time(ns uint64) time.Time {
	if t := fromNanos(ns); !t.IsZero() {
		return t
	}
	return p.now
}

func fromNanos(ns uint64) time.Time {
	if ns == 0 || ns > math.MaxInt64 {
		return time.Time{}
	}
	return time.Unix(0, int64(ns)).UTC()
}

// The request event's attributes, as Claude Code names them.
var requestTokens = []string{"input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens"}

// logRecord reads Claude Code's api_request event: one request's cost and
// tokens, at its own time. Other records are not spend.
func (p *parser) logRecord(lr *logspb.LogRecord) {
	attrs := make(map[string]*commonpb.AnyValue, len(lr.Attributes))
	for _, kv := range lr.Attributes {
		attrs[kv.GetKey()] = kv.GetValue()
	}
	name := lr.GetEventName()
	if name == "" {
		name = attrs["event.name"].GetStringValue()
	}
	if name == "" {
		name = lr.GetBody().GetStringValue()
	}
	if name != "api_request" && name != "claude_code.api_request" {
		return
	}
	usd, ok := anyNumber(attrs["cost_usd"])
	cost, good := toCost(usd, false)
	for _, k := range requestTokens {
		if n, ok := anyNumber(attrs[k]); ok && n >= 0 && n <= 1e12 {
			cost.Tokens += int64(n)
		}
	}
	if !ok || !good || !withinPoint(cost) {
		p.rejected++
		return
	}
	at := fromNanos(lr.TimeUnixNano)
	if ts := attrs["event.timestamp"].GetStringValue(); at.IsZero() && ts != "" {
		if t, err := time.Parse(time.RFC3339Nano, ts); err == nil {
			at = t.UTC()
		}
	}
	if at.IsZero() {
		at = fromNanos(lr.ObservedTimeUnixNano)
	}
	if at.IsZero() {
		at = p.now
	}
	p.add(coordinator.Spend{Agent: p.agent, Source: coordinator.SpendRequest, At: at, ID: requestID(lr), Cost: cost})
}

// requestID is a request event's identity: a digest of its time and
// attributes, the same each time an exporter sends it again and, with a
// request's own cost, duration and prompt among them, another for
// another request.
func requestID(lr *logspb.LogRecord) string {
	kvs := make([]string, 0, len(lr.Attributes)+1)
	kvs = append(kvs, "\x01time="+strconv.FormatUint(lr.TimeUnixNano, 10))
	for _, kv := range lr.Attributes {
		kvs = append(kvs, kv.GetKey()+"="+anyString(kv.GetValue()))
	}
	slices.Sort(kvs)
	sum := sha256.Sum256([]byte(strings.Join(kvs, "\x00")))
	return hex.EncodeToString(sum[:8])
}

// anyNumber reads a number that may come as a number or as a string
// (Claude Code sends its event attributes as strings).
func anyNumber(v *commonpb.AnyValue) (float64, bool) {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue, true
	case *commonpb.AnyValue_IntValue:
		return float64(x.IntValue), true
	case *commonpb.AnyValue_StringValue:
		f, err := strconv.ParseFloat(strings.TrimSpace(x.StringValue), 64)
		return f, err == nil
	}
	return 0, false
}

// response is the export's answer: empty, or a partial success that says
// how many points were refused and why (the collector's response: field 1,
// rejected data points or log records in its field 1, the message in its
// field 2).
func response(a answer, jsonBody, logs bool) []byte {
	rejected := a.rejected + a.excess
	var msgs []string
	if a.rejected > 0 {
		msgs = append(msgs, fmt.Sprintf("%d points without temporality, or with negative, non-finite or too large values (a point adds at most %s or %d tokens)",
			a.rejected, protocol.FormatUSD(coordinator.MaxPoint.USD), coordinator.MaxPoint.Tokens))
	}
	if a.excess > 0 {
		msgs = append(msgs, fmt.Sprintf("%d points past the limit of %d an export: export more often", a.excess, a.max))
	}
	msg := strings.Join(msgs, "; ")
	if jsonBody {
		if rejected == 0 {
			return []byte("{}")
		}
		field := "rejectedDataPoints"
		if logs {
			field = "rejectedLogRecords"
		}
		return fmt.Appendf(nil, `{"partialSuccess":{"%s":"%d","errorMessage":%q}}`, field, rejected, msg)
	}
	if rejected == 0 {
		return nil
	}
	var inner []byte
	inner = protowire.AppendTag(inner, 1, protowire.VarintType)
	inner = protowire.AppendVarint(inner, uint64(rejected))
	inner = protowire.AppendTag(inner, 2, protowire.BytesType)
	inner = protowire.AppendBytes(inner, []byte(msg))
	var out []byte
	out = protowire.AppendTag(out, 1, protowire.BytesType)
	return protowire.AppendBytes(out, inner)
}

package web

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/protocol"
)

// metrics are what foreman exports to Prometheus. Counters of what was said
// are counted as the bot says it (Observe); everything that is a state
// (components by state, queue depth, the room's counters) is read from the
// source at scrape time, so a scrape never sees a stale copy.
type metrics struct {
	reg         *prometheus.Registry
	replies     *prometheus.CounterVec
	claims      prometheus.Counter
	timeouts    prometheus.Counter
	retries     prometheus.Counter
	escalations *prometheus.CounterVec
	heard       prometheus.Counter
	handling    prometheus.Histogram
	events      prometheus.Counter
}

func newMetrics(s *Server) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		replies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "foreman_replies_total", Help: "Lines foreman said, by verb.",
		}, []string{"verb"}),
		claims: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "foreman_claims_total", Help: "Components assigned (ACK lines said).",
		}),
		timeouts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "foreman_timeouts_total", Help: "Builders that missed their check-ins (TIMEOUT lines said).",
		}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "foreman_retries_total", Help: "Builders that used all their audit attempts (RETRY lines said).",
		}),
		escalations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "foreman_escalations_total", Help: "Escalations to a human (ESCALATE lines said), by code.",
		}, []string{"code"}),
		heard: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "foreman_lines_heard_total", Help: "Lines heard in the room and handed to the engine.",
		}),
		// Handling includes the journal's synced write, so the buckets
		// reach from a fast in-memory batch to a slow disk.
		handling: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "foreman_event_handling_seconds",
			Help:    "Time to handle, journal and send one batch of room events.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 9),
		}),
		events: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "foreman_events_handled_total", Help: "Room events handled.",
		}),
	}
	// Every label value exists from the start, so a rate over a fresh
	// process is 0 rather than absent.
	for _, v := range protocol.ReplyVerbs() {
		m.replies.WithLabelValues(v.String())
	}
	for _, c := range protocol.Escalations() {
		m.escalations.WithLabelValues(string(c))
	}
	m.reg.MustRegister(m.replies, m.claims, m.timeouts, m.retries, m.escalations, m.heard, m.handling, m.events,
		&sourceCollector{s: s},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(s.opts.Collectors...)
	return m
}

// said counts one line foreman said.
func (m *metrics) said(r protocol.Reply) {
	m.replies.WithLabelValues(r.Verb.String()).Inc()
	switch r.Verb {
	case protocol.ReplyAck:
		m.claims.Inc()
	case protocol.ReplyTimeout:
		m.timeouts.Inc()
	case protocol.ReplyRetry:
		m.retries.Inc()
	case protocol.ReplyEscalate:
		m.escalations.WithLabelValues(string(r.Code)).Inc()
	}
}

// scrapeTimeout bounds how long a scrape waits for the bot's View: a bot
// that is stopping must not hang the scraper.
const scrapeTimeout = 2 * time.Second

var (
	descComponents = prometheus.NewDesc("foreman_components", "Components by state.", []string{"state"}, nil)
	descComplete   = prometheus.NewDesc("foreman_build_complete", "1 when every component is merged.", nil, nil)
	descPaused     = prometheus.NewDesc("foreman_build_paused", "1 while an operator has paused the build.", nil, nil)
	descHalted     = prometheus.NewDesc("foreman_build_halted", "1 while a dependency cycle halts the build.", nil, nil)
	descQueue      = prometheus.NewDesc("foreman_reply_queue_depth", "Reply lines waiting to be sent or confirmed by the room.", nil, nil)
	descSent       = prometheus.NewDesc("foreman_room_messages_sent_total", "Messages the room confirmed.", nil, nil)
	descLinesSent  = prometheus.NewDesc("foreman_room_lines_sent_total", "Lines in the messages the room confirmed.", nil, nil)
	descResent     = prometheus.NewDesc("foreman_room_resent_total", "Messages refused as too fast and sent again.", nil, nil)
	descReconnects = prometheus.NewDesc("foreman_room_reconnects_total", "Reconnections to the room.", nil, nil)
	descConnected  = prometheus.NewDesc("foreman_room_connected", "1 while foreman is connected to the room and has joined its channel.", nil, nil)
	descJournalOK  = prometheus.NewDesc("foreman_journal_ok", "1 while the journal takes writes.", nil, nil)
	descLastEvent  = prometheus.NewDesc("foreman_last_event_timestamp_seconds", "The engine's clock at its latest event, in Unix seconds.", nil, nil)
	descCommits    = prometheus.NewDesc("foreman_journal_commits_total", "Journal commits: one write and one fdatasync each.", nil, nil)
	descEntries    = prometheus.NewDesc("foreman_journal_entries_total", "Entries (events and confirmations) the journal's commits held.", nil, nil)
	descSpendUSD   = prometheus.NewDesc("foreman_spend_usd", "USD spent, as agents' exporters reported it: by the build, an agent or a component (issue 47).", []string{"scope", "name"}, nil)
	descSpendTok   = prometheus.NewDesc("foreman_spend_tokens", "Tokens spent, as agents' exporters reported them: by the build, an agent or a component.", []string{"scope", "name"}, nil)
	descSpendIgn   = prometheus.NewDesc("foreman_spend_ignored_total", "Spend reports the engine did not count (metrics of an agent that sends per-request events, malformed).", nil, nil)
)

// sourceCollector reads the states at scrape time.
type sourceCollector struct{ s *Server }

func (c *sourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descComponents, descComplete, descPaused, descHalted, descQueue,
		descSent, descLinesSent, descResent, descReconnects, descConnected, descJournalOK, descLastEvent,
		descCommits, descEntries, descSpendUSD, descSpendTok, descSpendIgn} {
		ch <- d
	}
}

func (c *sourceCollector) Collect(ch chan<- prometheus.Metric) {
	src := c.s.source()
	if src == nil {
		return
	}
	st := c.s.roomStats(src)
	h := src.Health()
	h.Commits += c.s.base.commits
	h.Entries += c.s.base.entries
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gauge(descQueue, float64(st.Queued))
	counter(descSent, st.MessagesSent)
	counter(descLinesSent, st.LinesSent)
	counter(descResent, st.Resent)
	counter(descReconnects, st.Reconnects)
	gauge(descConnected, b2f(h.Connected && h.Joined))
	gauge(descJournalOK, b2f(h.JournalErr == ""))
	counter(descCommits, h.Commits)
	counter(descEntries, h.Entries)
	if !h.LastEvent.IsZero() {
		gauge(descLastEvent, float64(h.LastEvent.UnixMilli())/1000)
	}

	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	v, err := src.View(ctx)
	if err != nil {
		return // the states are absent rather than wrong
	}
	counts := map[string]int{}
	for _, comp := range v.Components {
		counts[comp.State]++
	}
	for s := coordinator.Pending; s <= coordinator.Held; s++ {
		gauge(descComponents, float64(counts[s.String()]), s.String())
	}
	gauge(descComplete, b2f(v.Complete))
	gauge(descPaused, b2f(v.Paused))
	gauge(descHalted, b2f(len(v.Halted) > 0))
	spend := func(scope, name string, c coordinator.Cost) {
		ch <- prometheus.MustNewConstMetric(descSpendUSD, prometheus.CounterValue, float64(c.USD)/protocol.Micro, scope, name)
		ch <- prometheus.MustNewConstMetric(descSpendTok, prometheus.CounterValue, float64(c.Tokens), scope, name)
	}
	spend("build", v.Build, v.Spent)
	for _, a := range v.Agents {
		spend("agent", a.ID, a.Spent)
	}
	for _, comp := range v.Components {
		if !comp.Spent.IsZero() { // thousands of components: only those that spent
			spend("component", comp.Name, comp.Spent)
		}
	}
	counter(descSpendIgn, v.Ignored)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

package web

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/protocol"
)

func scrape(t *testing.T, url string) string {
	t.Helper()
	code, h, body := get(t, url+"/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, h.Get("Content-Type"), "text/plain")
	return string(body)
}

func TestMetrics(t *testing.T) {
	src := &fakeSource{view: shopView(), health: healthy(),
		stats: agentchat.Stats{MessagesSent: 7, LinesSent: 19, Resent: 1, Reconnects: 2, Queued: 3}}
	s := New(Options{})
	s.Attach(src)
	ts := newTestServer(t, s)

	s.Observe(tick(t0), said(t0, protocol.Tasks([]string{"db"})))
	s.Observe(heard(t0, "@b1", "CLAIM db\nhello all"), said(t0, protocol.Ack("db", "@b1", "")))
	s.Observe(tick(t0), said(t0, protocol.Timeout("db", "@b1"), protocol.Tasks([]string{"db"})))
	s.Observe(tick(t0), said(t0, protocol.Retry("api", "@b2"), protocol.Escalate("web", protocol.HardBlocker, "missing_dependency: no schema", "RESOLVE web"),
		protocol.Escalate("web", protocol.HardBlocker, "again", ""), protocol.Escalate("shop", protocol.Overtime, "build over 2h", "")))
	s.Handled(3*time.Millisecond, 2)
	s.Handled(40*time.Millisecond, 1)

	out := scrape(t, ts.URL)
	for _, want := range []string{
		`foreman_components{state="pending"} 1`,
		`foreman_components{state="building"} 1`,
		`foreman_components{state="merged"} 1`,
		`foreman_components{state="held"} 1`,
		`foreman_components{state="review"} 0`,
		`foreman_claims_total 1`,
		`foreman_timeouts_total 1`,
		`foreman_retries_total 1`,
		`foreman_escalations_total{code="hard-blocker"} 2`,
		`foreman_escalations_total{code="overtime"} 1`,
		`foreman_escalations_total{code="audit-exhausted"} 0`,
		`foreman_replies_total{verb="TASKS"} 2`,
		`foreman_lines_heard_total 2`,
		`foreman_reply_queue_depth 3`,
		`foreman_room_messages_sent_total 7`,
		`foreman_room_lines_sent_total 19`,
		`foreman_room_resent_total 1`,
		`foreman_room_reconnects_total 2`,
		`foreman_room_connected 1`,
		`foreman_journal_ok 1`,
		`foreman_build_complete 0`,
		`foreman_event_handling_seconds_count 2`,
		`foreman_event_handling_seconds_bucket{le="0.0064"} 1`,
		`foreman_events_handled_total 3`,
	} {
		// Not assert.Contains: on failure it would print the whole scrape.
		assert.Truef(t, strings.Contains(out, want+"\n"), "the scrape lacks %q", want)
	}
	assert.Contains(t, out, "\ngo_goroutines ", "the Go runtime's metrics are there too")
	assert.Contains(t, out, "# TYPE foreman_event_handling_seconds histogram")
	assert.Contains(t, out, "# TYPE foreman_components gauge")

	// When the bot does not answer, the states are left out, not made up;
	// the rest of the scrape still works.
	src.set(func(f *fakeSource) { f.viewErr = errors.New("stopped") })
	out = scrape(t, ts.URL)
	assert.NotContains(t, out, "foreman_components{")
	assert.Contains(t, out, "foreman_claims_total 1\n")
}

func TestMetricsBeforeAttach(t *testing.T) {
	ts := newTestServer(t, New(Options{}))
	out := scrape(t, ts.URL)
	assert.Contains(t, out, "foreman_claims_total 0\n")
	assert.False(t, strings.Contains(out, "foreman_room_connected"), "no source, no room metrics")
}

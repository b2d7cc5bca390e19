package web

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/coordinator"
)

// Spend per build, agent and component is in the metrics (issue 47); a
// component that spent nothing adds no series.
func TestSpendMetrics(t *testing.T) {
	v := shopView()
	v.Spent = coordinator.Cost{USD: 2_500_000, Tokens: 4000}
	v.Agents = []coordinator.AgentView{{ID: "@b2", Spent: coordinator.Cost{USD: 2_500_000, Tokens: 4000}, Holds: "api"}}
	v.Components[1].Spent = coordinator.Cost{USD: 1_250_000, Tokens: 1000}
	v.Ignored = 3
	s := New(Options{})
	s.Attach(&fakeSource{view: v, health: healthy()})
	out := scrape(t, newTestServer(t, s).URL)
	for _, want := range []string{
		`foreman_spend_usd{name="shop",scope="build"} 2.5`,
		`foreman_spend_tokens{name="shop",scope="build"} 4000`,
		`foreman_spend_usd{name="@b2",scope="agent"} 2.5`,
		`foreman_spend_usd{name="api",scope="component"} 1.25`,
		`foreman_spend_tokens{name="api",scope="component"} 1000`,
		`foreman_spend_ignored_total 3`,
	} {
		assert.Truef(t, strings.Contains(out, want+"\n"), "the scrape lacks %q", want)
	}
	assert.NotContains(t, out, `name="db",scope="component"`)
}

// The OTLP receiver is served where exporters post, on the same listener.
func TestOTLPIsServed(t *testing.T) {
	var paths []string
	s := New(Options{OTLP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { paths = append(paths, r.URL.Path) })})
	ts := newTestServer(t, s)
	for _, p := range []string{"/v1/metrics", "/v1/logs"} {
		resp, err := http.Post(ts.URL+p, "application/x-protobuf", strings.NewReader(""))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	}
	assert.Equal(t, []string{"/v1/metrics", "/v1/logs"}, paths)
	resp, err := http.Post(newTestServer(t, New(Options{})).URL+"/v1/metrics", "application/x-protobuf", strings.NewReader(""))
	require.NoError(t, err)
	resp.Body.Close()
	assert.NotEqual(t, http.StatusOK, resp.StatusCode, "without a receiver, nothing takes exports")
}

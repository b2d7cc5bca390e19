package web

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/bot"
)

func TestHealthz(t *testing.T) {
	src := &fakeSource{health: healthy()}
	s := New(Options{Now: func() time.Time { return t0.Add(90 * time.Second) }})
	ts := newTestServer(t, s)

	var rep HealthReport
	require.Equal(t, http.StatusServiceUnavailable, getJSON(t, ts.URL+"/healthz", &rep), "nothing attached yet")
	assert.False(t, rep.Healthy)
	assert.NotEmpty(t, rep.Problems)

	s.Attach(src)
	rep = HealthReport{}
	require.Equal(t, http.StatusOK, getJSON(t, ts.URL+"/healthz", &rep))
	assert.True(t, rep.Healthy)
	assert.Empty(t, rep.Problems)
	assert.True(t, rep.JournalOK)
	require.NotNil(t, rep.LastEventAgeSeconds)
	assert.InDelta(t, 90, *rep.LastEventAgeSeconds, 0.001)

	cases := map[string]struct {
		health  bot.Health
		problem string
	}{
		"disconnected":  {bot.Health{Joined: false, LastEvent: t0}, "not connected to the room"},
		"not joined":    {bot.Health{Connected: true, LastEvent: t0}, "connected, but not in the channel yet"},
		"journal fails": {bot.Health{Connected: true, Joined: true, JournalErr: "disk full"}, "journal: disk full"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			src.set(func(f *fakeSource) { f.health = c.health })
			var rep HealthReport
			require.Equal(t, http.StatusServiceUnavailable, getJSON(t, ts.URL+"/healthz", &rep))
			assert.False(t, rep.Healthy)
			assert.Contains(t, rep.Problems, c.problem)
		})
	}
}

func TestStartServesUntilStopped(t *testing.T) {
	s, url, stop, err := Start("127.0.0.1:0", Options{})
	require.NoError(t, err)
	s.Attach(&fakeSource{health: healthy()})
	code, _, _ := get(t, url+"healthz")
	assert.Equal(t, http.StatusOK, code)

	_, _, _, err = Start(strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/"), Options{})
	assert.Error(t, err, "the port is taken")

	stop()
	_, err = http.Get(url + "healthz")
	assert.Error(t, err, "stopped")
}

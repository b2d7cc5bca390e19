package web

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// boardHas polls /api/view until cond holds.
func boardHas(t *testing.T, url, what string, cond func(b Board) bool) Board {
	t.Helper()
	deadline := time.Now().Add(liveTimeout)
	for {
		var b Board
		if getJSON(t, url+"api/view", &b) == http.StatusOK && cond(b) {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("the board never showed %s", what)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not an assertion
	}
}

func component(b Board, name string) (state string, progress int) {
	for _, c := range b.View.Components {
		if c.Name == name {
			return c.State, c.Progress
		}
	}
	return "", 0
}

// TestLiveBoardFollowsTheBuild runs the whole script against the real bot
// and checks the JSON, the stream, health and metrics; the browser test
// checks the page on the same script.
func TestLiveBoardFollowsTheBuild(t *testing.T) {
	lb := startLiveBuild(t, shop(), liveCast...)
	lb.expect("TASKS db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := openStream(t, ctx, strings.TrimSuffix(lb.URL, "/"))
	first := stream.next()
	require.NotNil(t, first.View)
	assert.True(t, first.Full)

	var health HealthReport
	require.Equal(t, http.StatusOK, getJSON(t, lb.URL+"healthz", &health))
	assert.True(t, health.Healthy)

	lb.actOne(func(state string) {
		boardHas(t, lb.URL, "db "+state, func(b Board) bool {
			s, p := component(b, "db")
			if state == "progress" {
				return s == "building" && p == 60
			}
			return s == state
		})
	})
	lb.actTwo()
	b := boardHas(t, lb.URL, "the build mid-flight", func(b Board) bool {
		s, p := component(b, "docs")
		return s == "building" && p == 45
	})
	for name, want := range map[string]string{"db": "merged", "auth": "review", "catalog": "held", "cart": "pending", "web": "pending"} {
		s, _ := component(b, name)
		assert.Equal(t, want, s, name)
	}
	b = boardHas(t, lb.URL, "docs overlapping auth", func(b Board) bool {
		for _, c := range b.View.Components {
			if c.Name == "docs" {
				return c.Branch == "b3/docs" && slices.Equal(c.Overlaps, []string{"auth"})
			}
		}
		return false
	})
	require.Contains(t, b.Escalations, "catalog")
	assert.Equal(t, "hard-blocker", b.Escalations["catalog"].Code)
	assert.Contains(t, b.Escalations["catalog"].Text, "missing_dependency: the product schema was never specified")

	lb.actThree()
	b = boardHas(t, lb.URL, "COMPLETE", func(b Board) bool { return b.View.Complete })
	assert.Equal(t, 6, b.View.Merged)
	assert.Empty(t, b.Escalations)

	// The stream followed: it must reach the completed build by itself.
	deadline := time.After(liveTimeout)
	for done := false; !done; {
		select {
		case ev := <-stream.events:
			done = ev.View != nil && ev.View.Complete
		case <-deadline:
			t.Fatal("the stream never showed the build complete")
		}
	}

	out := scrape(t, strings.TrimSuffix(lb.URL, "/"))
	for _, want := range []string{
		`foreman_claims_total 7`,
		`foreman_escalations_total{code="hard-blocker"} 1`,
		`foreman_components{state="merged"} 6`,
		`foreman_build_complete 1`,
		`foreman_replies_total{verb="COMPLETE"} 1`,
		`foreman_room_connected 1`,
	} {
		assert.Truef(t, strings.Contains(out, want+"\n"), "the scrape lacks %q", want)
	}
	assert.NotContains(t, out, "foreman_event_handling_seconds_count 0\n", "handling times were observed")
}

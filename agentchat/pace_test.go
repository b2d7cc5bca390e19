package agentchat

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"golang.org/x/time/rate"
)

func TestFloodLimiter(t *testing.T) {
	stock := floodLimiter(0)
	assert.Equal(t, rate.Limit(2.5), stock.Limit(), "50 MSGs in 10s against the stock 60 frames")
	assert.Equal(t, 25, stock.Burst())
	assert.Equal(t, rate.Inf, floodLimiter(-1).Limit(), "a room without a flood limit")
	big := floodLimiter(1010)
	assert.Equal(t, rate.Limit(50), big.Limit())
	assert.Equal(t, 500, big.Burst())
}

// After a refusal the pace halves; after runs of accepted messages it
// returns to what the configuration asks for, a step at a time: a room
// that really is stricter should refuse once per run, not every message.
func TestPaceRecoversAfterARefusal(t *testing.T) {
	c := New(Config{URL: "ws://127.0.0.1:1", Channel: "#b", RateLimit: time.Second})
	s := &session{c: c}
	s.slowDown()
	assert.Equal(t, 2*c.base, c.interval)
	for range smoothRun - 1 {
		s.speedUp()
	}
	assert.Equal(t, 2*c.base, c.interval, "no change before a whole run")
	s.speedUp()
	assert.Equal(t, c.base+(c.base*3/4), c.interval, "a quarter of the way back after one run")
	runs := 1
	for ; runs < 40 && c.interval > c.base; runs++ {
		for range smoothRun {
			s.speedUp()
		}
	}
	assert.Equal(t, c.base, c.interval)
	assert.Greater(t, runs, 3, "several runs to get back")
}

// The next message waits for a period after the server took the last one,
// by the server's clock, not for a period after its echo came back.
func TestPaceFromTheServersClock(t *testing.T) {
	c := New(Config{URL: "ws://127.0.0.1:1", Channel: "#b", RateLimit: time.Second})
	s := &session{c: c}
	sent := time.Now().Add(-1500 * time.Millisecond) // sent 1.5s ago
	serverTS := sent.Add(100 * time.Millisecond)     // taken 100ms later; the echo came only now
	c.skew.add(serverTS, sent)
	s.paceFrom(serverTS)
	assert.WithinDuration(t, sent.Add(c.interval), c.nextSend, time.Millisecond)
	assert.True(t, c.nextSend.Before(time.Now()), "the next message may go at once")
}

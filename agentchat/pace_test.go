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
// returns to what the configuration asks for.
func TestPaceRecoversAfterARefusal(t *testing.T) {
	c := New(Config{URL: "ws://127.0.0.1:1", Channel: "#b", RateLimit: time.Second})
	s := &session{c: c}
	s.slowDown()
	assert.Equal(t, 2*c.base, c.interval)
	for i := 0; i < 40*smoothRun && c.interval > c.base; i++ {
		s.speedUp()
	}
	assert.Equal(t, c.base, c.interval)
}

package coordinator

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// restart is e after a snapshot's round trip through JSON.
func restart(t *testing.T, e *Engine) *Engine {
	t.Helper()
	data, err := json.Marshal(e.Snapshot())
	require.NoError(t, err)
	var s Snapshot
	require.NoError(t, json.Unmarshal(data, &s))
	r, err := Restore(e.cfg, &s)
	require.NoError(t, err)
	return r
}

// A cumulative point retried out of order (the same start, a lower sum
// than one already counted) counts nothing, and the series goes on from
// the higher sum; a point of an earlier start, after a restart, likewise.
func TestRetriedCumulativeCountsNothing(t *testing.T) {
	e := newEngine(t, nil)
	e.doStart(t0)
	e.doReceive(msg("@b1", "CLAIM db", time.Second))
	point := func(d time.Duration, start time.Time, dollars float64) Spend {
		return Spend{Agent: "@b1", Source: SpendCumulative, Series: "cost", Start: start, At: at(d), Cost: usd(dollars)}
	}
	e.doSpend(2*time.Second, point(2*time.Second, t0, 1))
	e.doSpend(3*time.Second, point(3*time.Second, t0, 3))
	e.doSpend(4*time.Second, point(2*time.Second, t0, 1)) // the first, retried
	assert.Equal(t, usd(3), e.View().Spent)
	e.doSpend(5*time.Second, point(5*time.Second, t0, 4))
	assert.Equal(t, usd(4), e.View().Spent, "from the higher sum")
	restarted := at(4500 * time.Millisecond)
	e.doSpend(6*time.Second, point(6*time.Second, restarted, 0.5))
	e.doSpend(7*time.Second, point(5*time.Second, t0, 4)) // the old counter's, retried late
	assert.Equal(t, usd(4.5), e.View().Spent)
}

// Delta points of a named series and requests with an identity count once,
// however often an exporter sends them again, also across a restart.
func TestRetriedDeltaAndRequestCountOnce(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Components = []Component{{Name: "db"}, {Name: "api"}} })
	e.doStart(t0)
	e.doReceive(msg("@b1", "CLAIM db", time.Second))
	e.doReceive(msg("@b2", "CLAIM api", time.Second))
	delta := func(d time.Duration, dollars float64) Spend {
		return Spend{Agent: "@b1", Source: SpendDelta, Series: "cost#1", Start: at(d - time.Second), At: at(d), Cost: usd(dollars)}
	}
	req := func(id string, d time.Duration) Spend {
		s := request("@b2", d, usd(1))
		s.ID = id
		return s
	}
	e.doSpend(2*time.Second, delta(2*time.Second, 1))
	e.doSpend(2*time.Second, req("r1", 2*time.Second))
	e.doSpend(3*time.Second, delta(2*time.Second, 1))
	e.doSpend(3*time.Second, req("r1", 2*time.Second))
	e = restart(t, e)
	e.doSpend(4*time.Second, delta(2*time.Second, 1))
	e.doSpend(4*time.Second, req("r1", 2*time.Second))
	e.doSpend(5*time.Second, delta(3*time.Second, 2))
	e.doSpend(5*time.Second, req("r2", 3*time.Second))
	v := e.View()
	assert.Equal(t, usd(3), v.Components[0].Spent, "db: 1 + 2, each once")
	assert.Equal(t, usd(2), v.Components[1].Spent, "api: r1 and r2, each once")

	// The identities kept are bounded: the oldest is forgotten.
	for i := range maxRequestIDs {
		e.doSpend(6*time.Second, req(fmt.Sprintf("n%d", i), 6*time.Second))
	}
	assert.Len(t, e.agentSpend("@b2", false).reqIDs, maxRequestIDs)
	e.doSpend(7*time.Second, req("r1", 2*time.Second))
	assert.Equal(t, usd(2+maxRequestIDs+1), e.View().Components[1].Spent, "r1 is past the identities kept")
}

// One point adds at most MaxPoint: more is refused and counted, so one
// report cannot fill a budget; a cumulative series goes on from it.
func TestOnePointIsCapped(t *testing.T) {
	e := newEngine(t, nil)
	e.doStart(t0)
	e.doReceive(msg("@b1", "CLAIM db", time.Second))
	e.doSpend(2*time.Second, request("@b1", 2*time.Second, Cost{USD: MaxPoint.USD}))
	e.doSpend(2*time.Second, request("@b1", 2*time.Second, Cost{USD: MaxPoint.USD + 1}))
	e.doSpend(2*time.Second, request("@b1", 2*time.Second, Cost{Tokens: MaxPoint.Tokens + 1}))
	e.doSpend(2*time.Second, request("@b1", 2*time.Second, usd(1e6)))
	v := e.View()
	assert.Equal(t, Cost{USD: MaxPoint.USD}, v.Spent)
	assert.EqualValues(t, 3, v.Ignored)

	e2 := newEngine(t, nil)
	e2.doStart(t0)
	series := func(d time.Duration, c Cost) Spend {
		return Spend{Agent: "@b2", Source: SpendCumulative, Series: "cost", Start: t0, At: at(d), Cost: c}
	}
	e2.doSpend(time.Second, series(time.Second, usd(1e6)))
	e2.doSpend(2*time.Second, series(2*time.Second, usd(1e6+1)))
	assert.Equal(t, usd(1), e2.View().Spent, "the growth after the refused point")
}

// The percentage of a budget is right for any spend the sums can hold:
// s*100 overflows an int64 long before maxSpend.
func TestPercentOfTheLargestSpend(t *testing.T) {
	assert.EqualValues(t, 100_000, pct(maxSpend, maxSpend/1000))
	assert.EqualValues(t, 80, pct(4, 5))
	assert.EqualValues(t, 166, pct(5, 3))
	assert.Contains(t, figures(Cost{USD: maxSpend}, Limit{USD: 1_000_000, HasUSD: true}), "(100000000000000%)")
}

// An agent's own times are trusted from a day before the receipt to
// five minutes after it: ahead of the receipt they are placed as at it,
// outside the span they are refused and counted, so a point far ahead
// keeps no later point of its series from counting; a start after the
// point's own time is refused.
func TestSpendTimesAgainstTheReceipt(t *testing.T) {
	e := newEngine(t, nil)
	e.doStart(t0)
	e.doReceive(msg("@b1", "CLAIM db", time.Second))
	// Deltas first: once @b1 sends a request, its metrics no longer count.
	e.doSpend(time.Second, Spend{Agent: "@b1", Source: SpendDelta, Series: "d", Start: at(0), At: at(1000 * time.Hour), Cost: usd(32)})
	e.doSpend(2*time.Second, Spend{Agent: "@b1", Source: SpendDelta, Series: "d", Start: at(time.Second), At: at(2 * time.Second), Cost: usd(64)})
	e.doSpend(2*time.Second, request("@b1", 2*time.Second+maxSpendSkew, usd(1)))
	e.doSpend(2*time.Second, Spend{Agent: "@b1", Source: SpendRequest, At: at(2*time.Second - maxSpendAge - time.Millisecond), Cost: usd(2)})
	e.doSpend(2*time.Second, Spend{Agent: "@b1", Source: SpendRequest, At: at(2*time.Second - maxSpendAge), Cost: usd(4)})
	e.doSpend(2*time.Second, Spend{Agent: "@b1", Source: SpendRequest, Cost: usd(8)}) // year 1
	e.doReceive(msg("@b1", "RELEASE db", 3*time.Second))
	e.doSpend(3*time.Second, Spend{Agent: "@b3", Source: SpendDelta, Series: "s", Start: at(3 * time.Second), At: at(2 * time.Second), Cost: usd(16)})
	v := e.View()
	assert.Equal(t, usd(65), v.Components[0].Spent, "a little ahead is now: db")
	assert.Equal(t, usd(69), v.Spent, "a day before the receipt counts to the agent alone; before that, nothing")
	assert.EqualValues(t, 4, v.Ignored)
}

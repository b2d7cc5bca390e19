package web

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/coordinator"
)

// TestBrowserShowsSpend: what was spent, as foreman counted it, on the
// page: the build's in the header, a component's in its card's corner
// (tokens and budget when pointed at), an agent's in the member list; a
// card that spends still shows its whole title and owner.
func TestBrowserShowsSpend(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	requireChromium(t)
	lb := startLiveBuild(t, []coordinator.Component{{Name: "db"}, {Name: "api", Deps: []string{"db"}}}, "b1", "operator")
	lb.expect("TASKS db")
	lb.say("b1", "CLAIM db")
	lb.expect("ACK db")
	lb.say("operator", "BUDGET db 5")
	lb.expect("OK BUDGET db")
	p := openPage(t, lb.URL)
	p.waitState("db", "building")
	assert.True(t, p.eval(node("db")+`.querySelector('.cost').hidden ? 'hidden' : 'shown'`) == "shown", "a budget alone shows the corner")

	ctx, cancel := context.WithTimeout(context.Background(), liveTimeout)
	defer cancel()
	require.NoError(t, lb.bot.Spend(ctx, []coordinator.Spend{{Agent: lb.id("b1"), Source: coordinator.SpendRequest,
		At: time.Now(), ID: "r1", Cost: coordinator.Cost{USD: 1_250_000, Tokens: 1000}}}))

	p.waitFor("db's cost on its card", node("db")+`.querySelector('.cost').textContent === '$1.25'`)
	assert.Equal(t, "spent $1.25 · 1000 tokens of $5.00", p.eval(node("db")+`.querySelector('.cost').title`))
	assert.Equal(t, "shown", p.eval(node("db")+`.querySelector('.cost').hidden ? 'hidden' : 'shown'`))
	assert.Equal(t, "hidden", p.eval(node("api")+`.querySelector('.cost').hidden ? 'hidden' : 'shown'`), "nothing spent, no budget: no corner")
	p.waitFor("the build's spend in the header", `document.getElementById('spent').textContent === '$1.25 · 1000 tokens'`)
	p.waitFor("b1's spend in the member list", `document.querySelector('#members li[data-member="`+lb.id("b1")+`"] .spent')?.textContent === 'spent $1.25 · 1000 tokens'`)
	assert.Equal(t, "false", p.eval(`String(`+node("db")+`.querySelector('.cost').classList.contains('nearly'))`))
	assert.Equal(t, "true", p.eval(`String((() => { const h = `+node("db")+`.querySelector('h3'), c = `+node("db")+`.querySelector('.cost');
  return h.getBoundingClientRect().left + h.scrollWidth <= c.getBoundingClientRect().left + 1; })())`), "the title clear of the corner")
	assert.True(t, strings.HasPrefix(p.text(`#nodes li[data-name="db"] .owner`), "owner b1"))

	// At 80% of its budget the corner says so.
	require.NoError(t, lb.bot.Spend(ctx, []coordinator.Spend{{Agent: lb.id("b1"), Source: coordinator.SpendRequest,
		At: time.Now(), ID: "r2", Cost: coordinator.Cost{USD: 3_000_000}}}))
	p.waitFor("db's cost, nearly spent", node("db")+`.querySelector('.cost').classList.contains('nearly')`)
	assert.Equal(t, "$4.25", p.eval(node("db")+`.querySelector('.cost').textContent`))
}

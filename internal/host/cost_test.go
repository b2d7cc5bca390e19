package host

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/host/receipt"
)

// A landing's receipt says what the component cost, as foreman's STATUS
// line said it with the approval (issue 47); where foreman said nothing,
// or something the host cannot read, the receipt says nothing: the host
// does not guess.
func TestTheReceiptSaysTheCost(t *testing.T) {
	land := func(c, more string) (receipt.Landing, string) {
		s := trainHarness(t, 1)
		s.checked(c, "T")
		return s.landingReceiptSaying(c, more, Outcome{Result: Passed, Reused: true, Commit: "m-" + c, Tip: "t-" + c, Base: "T", Tree: "tr-" + c,
			Chain: []Made{{Commit: "m-" + c, Tree: "tr-" + c}}})
	}
	p, raw := land("a", " spent=$1.25 tokens=3000 budget=$5.00")
	require.NotNil(t, p.Cost)
	assert.Equal(t, receipt.Cost{USD: "1.25", Tokens: 3000}, *p.Cost)
	assert.Contains(t, raw, `"cost":{"usd":"1.25","tokens":3000}`)
	p, _ = land("z", " spent=$0.00 tokens=0 budget=$5.00")
	assert.Equal(t, &receipt.Cost{USD: "0.00", Tokens: 0}, p.Cost, "nothing spent, said so: a cost of 0")

	for _, more := range []string{"", " spent=1.25 tokens=3000", " spent=$-1 tokens=3", " spent=$1.25", " spent=$1.25 tokens=-4"} {
		p, raw := land("b", more)
		assert.Nil(t, p.Cost, more)
		assert.NotContains(t, raw, `"cost"`, more)
	}
}

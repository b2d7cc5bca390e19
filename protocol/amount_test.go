package protocol

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadBudget(t *testing.T) {
	cases := []struct {
		line string
		want Command
	}{
		{"BUDGET api 5", Command{Verb: Budget, Component: "api", Amount: Amount{Value: 5 * Micro}}},
		{"budget api +2.50 more for the tests", Command{Verb: Budget, Component: "api", Amount: Amount{Raise: true, Value: 2_500_000}, Text: "more for the tests"}},
		{"BUDGET @b1 200000t", Command{Verb: Budget, Agent: "@b1", Amount: Amount{Tokens: true, Value: 200000}}},
		{"BUDGET build none", Command{Verb: Budget, Component: "build", Amount: Amount{None: true}}},
		{"BUDGET Build $0.000125", Command{Verb: Budget, Component: "build", Amount: Amount{Value: 125}}},
		{"BUDGET api +1000t", Command{Verb: Budget, Component: "api", Amount: Amount{Raise: true, Tokens: true, Value: 1000}}},
	}
	for _, tc := range cases {
		got, err := Read(tc.line)
		require.NoError(t, err, tc.line)
		assert.Equal(t, tc.want, got, tc.line)
		again, err := Read(got.String())
		require.NoError(t, err, got.String())
		assert.Equal(t, got, again, "String reads back: %s", got.String())
	}
	assert.True(t, Budget.IsOperatorCommand())
}

func TestReadBudgetRefusesBadAmounts(t *testing.T) {
	for _, line := range []string{"BUDGET api", "BUDGET api -5", "BUDGET api 5.1234567", "BUDGET api five",
		"BUDGET api 5.", "BUDGET api 1.5t", "BUDGET api t", "BUDGET @ 5", "BUDGET api 10000000000000", "BUDGET api ++5", "BUDGET api +-5t"} {
		_, err := Read(line)
		var pe *ParseError
		require.ErrorAs(t, err, &pe, line)
		assert.Contains(t, err.Error(), "usage: BUDGET", line)
	}
}

func TestFormatUSD(t *testing.T) {
	for micro, want := range map[int64]string{0: "$0.00", 5 * Micro: "$5.00", 4_020_000: "$4.02", 125: "$0.000125", 1_234_500: "$1.2345"} {
		assert.Equal(t, want, FormatUSD(micro))
	}
}

package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	errMissing = errors.New("missing")
	errExists  = errors.New("exists")
	errRefused = errors.New("refused")
)

// A request of the setup that went unanswered is asked again (the CI run
// where a fresh three-node cluster left the lease bucket's first request
// unanswered until Connect's 30 s ran out); one that was answered, even
// with a refusal, is not.
func TestAnUnansweredRequestIsAskedAgain(t *testing.T) {
	for _, lost := range []error{context.DeadlineExceeded, nats.ErrTimeout, nats.ErrNoResponders} {
		calls := 0
		v, err := ask(context.Background(), func(ctx context.Context) (int, error) {
			calls++
			if _, ok := ctx.Deadline(); !ok {
				return 0, errors.New("a try without a bound")
			}
			if calls == 1 {
				return 0, lost
			}
			return 7, nil
		})
		require.NoError(t, err, "%v", lost)
		assert.Equal(t, 7, v)
		assert.Equal(t, 2, calls, "%v", lost)
	}

	calls := 0
	_, err := ask(context.Background(), func(context.Context) (int, error) { calls++; return 0, errRefused })
	assert.ErrorIs(t, err, errRefused)
	assert.Equal(t, 1, calls, "an answered request is not repeated")
}

func TestAskStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := ask(ctx, func(ctx context.Context) (int, error) { <-ctx.Done(); return 0, ctx.Err() })
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

// ensure makes what is missing; a make that went unanswered or lost a race
// is followed by a look that finds it made.
func TestEnsureFindsWhatAnotherMade(t *testing.T) {
	made := false
	looks, makes := 0, 0
	look := func(context.Context) (string, error) {
		looks++
		if made {
			return "bucket", nil
		}
		return "", errMissing
	}
	mk := func(context.Context) (string, error) {
		makes++
		made = true // another process made it first
		return "", errExists
	}
	v, err := ensure(context.Background(), look, mk, errMissing, errExists)
	require.NoError(t, err)
	assert.Equal(t, "bucket", v)
	assert.Equal(t, [2]int{2, 1}, [2]int{looks, makes})

	_, err = ensure(context.Background(), func(context.Context) (string, error) { return "", errRefused }, mk, errMissing, errExists)
	assert.ErrorIs(t, err, errRefused)
}

package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
)

// attempt bounds one JetStream request of a setup. On a NATS cluster a
// request can go unanswered: the meta leader it reached stepped down, or
// the cluster has just elected one and drops what came before; then only
// asking again gets an answer, and only the caller's ctx bounds the setup.
const attempt = 5 * time.Second

// again is the pause before asking again after a quick refusal (no
// responders: JetStream is not there yet).
const again = 100 * time.Millisecond

// ask makes the request f until it is answered or ctx ends: each try is
// bounded by attempt, and one that went unanswered is made again. A
// request that is answered, with a result or a refusal, is never repeated.
func ask[T any](ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	for {
		actx, cancel := context.WithTimeout(ctx, attempt)
		v, err := f(actx)
		cancel()
		if err == nil || ctx.Err() != nil || !unanswered(err) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(again):
		}
	}
}

func unanswered(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders)
}

// ensure looks a JetStream object up and makes it when it is not there
// (missing), every request asked until answered. Another process may make
// it at the same moment: then its own make is refused (exists), or goes
// unanswered, and the next look finds it.
func ensure[T any](ctx context.Context, look, make func(context.Context) (T, error), missing, exists error) (T, error) {
	for {
		v, err := ask(ctx, look)
		if !errors.Is(err, missing) {
			return v, err
		}
		v, err = ask(ctx, make)
		if err == nil || !errors.Is(err, exists) {
			return v, err
		}
	}
}

package agentchat_test

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/agentchat/internal/chattest"
)

const wait = chattest.Wait

// running is a client whose Run goroutine the test owns.
type running struct {
	t      *testing.T
	c      *agentchat.Client
	done   chan error
	cancel context.CancelFunc
}

// run starts a client in #build with test-sized timings; the test's end
// stops it.
func run(t *testing.T, cfg agentchat.Config) *running {
	t.Helper()
	return runLogged(t, cfg, io.Discard)
}

// runLogged is run with the client's log written to w as well.
func runLogged(t *testing.T, cfg agentchat.Config, w io.Writer) *running {
	t.Helper()
	if cfg.Channel == "" {
		cfg.Channel = chattest.Channel
	}
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff, cfg.MaxBackoff = 5*time.Millisecond, 50*time.Millisecond
	}
	if cfg.RateLimit == 0 {
		cfg.RateLimit = 50 * time.Millisecond
	}
	cfg.Logger = zerolog.New(zerolog.MultiLevelWriter(zerolog.NewTestWriter(t), w)).Level(zerolog.DebugLevel)
	r := &running{t: t, c: agentchat.New(cfg), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- r.c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(wait):
			t.Error("Run did not return after its context ended")
		}
	})
	return r
}

// next returns the client's next event of type T, skipping others.
func next[T agentchat.Event](r *running) T {
	r.t.Helper()
	timeout := time.After(wait)
	for {
		select {
		case e, ok := <-r.c.Events():
			if !ok {
				r.t.Fatalf("events closed while waiting for %T", *new(T))
			}
			if v, ok := e.(T); ok {
				return v
			}
		case <-timeout:
			r.t.Fatalf("no %T within %s", *new(T), wait)
		}
	}
}

// ready waits for the client to be in the channel.
func (r *running) ready() agentchat.Joined {
	r.t.Helper()
	next[agentchat.Connected](r)
	return next[agentchat.Joined](r)
}

// delivered waits until the lines with seqs first..first+n-1 are
// confirmed and returns the Delivered events; a seq confirmed twice, or one
// outside the range, fails the test.
func (r *running) delivered(first uint64, n int) []agentchat.Delivered {
	r.t.Helper()
	seen := map[uint64]bool{}
	var out []agentchat.Delivered
	for len(seen) < n {
		d := next[agentchat.Delivered](r)
		for _, s := range d.Seqs {
			require.False(r.t, seen[s], "line %d confirmed twice", s)
			require.True(r.t, s >= first && s < first+uint64(n), "line %d confirmed unexpectedly", s)
			seen[s] = true
		}
		out = append(out, d)
	}
	return out
}

// fatal waits for Run to return its error.
func (r *running) fatal() error {
	r.t.Helper()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		return err
	case <-time.After(wait):
		r.t.Fatal("Run did not return")
		return nil
	}
}

// numbered is n lines "<prefix> 1" .. "<prefix> n" with seqs from first.
func numbered(prefix string, first uint64, n int) []agentchat.Line {
	out := make([]agentchat.Line, n)
	for i := range out {
		out[i] = agentchat.Line{Seq: first + uint64(i), Text: fmt.Sprintf("%s %d", prefix, int(first)+i)}
	}
	return out
}

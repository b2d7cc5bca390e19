package agentchat

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/rs/zerolog"
)

// Present looks, as a listener with no identity of its own, whether id is
// in the channel cfg names now: a program about to join with a key can
// tell whether another program is in the room with it already (joining
// would take the key's place from it). It gives up after wait: a room it
// cannot look into says nothing either way (an error).
func Present(ctx context.Context, cfg Config, id string, wait time.Duration) (bool, error) {
	cfg.Identity, cfg.Name = nil, "look"
	// The look only listens: what a keyless client is warned of (it may
	// not send) is not the caller's to hear (foreman mcp told an agent with
	// its key that it had none).
	cfg.Logger = cfg.Logger.Level(max(cfg.Logger.GetLevel(), zerolog.ErrorLevel))
	cfg.FirstAttempts = 1
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	c := New(cfg)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for {
		select {
		case ev, ok := <-c.Events():
			if !ok {
				return false, errors.New("the room closed the connection")
			}
			if j, ok := ev.(Joined); ok {
				return slices.ContainsFunc(j.Agents, func(a Agent) bool { return a.ID == id }), nil
			}
		case <-ctx.Done():
			return false, errors.New("the room did not let a listener in in time")
		}
	}
}

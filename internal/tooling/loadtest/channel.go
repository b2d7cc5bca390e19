package loadtest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/agentchat"
)

// openChannel has foreman's key make the channel on a server of the
// caller's (--url) before the agents join. A stock server lets only a
// verified key create one, and the README has its admin verify foreman's
// (GENESIS_AGENT_ID); the agents, who join first, cannot. The key leaves
// the room before the bot signs in with it, so the two never displace
// each other. A key that may not create the channel is no error here: the
// agents try next, and their refusal says what to do.
func openChannel(ctx context.Context, url, channel string, id *agentchat.Identity) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c := agentchat.New(agentchat.Config{
		URL: url, Channel: channel, Identity: id, Name: id.Name, CreateChannel: true, Logger: zerolog.Nop(),
	})
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()
	for ev := range c.Events() {
		if _, ok := ev.(agentchat.Joined); ok {
			cancel()
		}
	}
	err := <-runErr
	var refused *agentchat.ServerError
	switch {
	case errors.As(err, &refused) && (refused.Code == agentchat.CodeAuthRequired || refused.Code == agentchat.CodeChannelNotFound):
		return nil // not foreman's to create: the agents may
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("foreman's key could not join %s at %s within 30s", channel, url)
	case err != nil && !errors.Is(err, context.Canceled):
		return fmt.Errorf("foreman's key: %w", err)
	}
	return nil
}

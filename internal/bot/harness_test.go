package bot

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// fastConfig is a build whose check-in deadline is short enough for a test.
func fastConfig(t *testing.T, url, dir string, comps ...coordinator.Component) *config.Config {
	t.Helper()
	c, err := config.Load("", nil, nil)
	require.NoError(t, err)
	c.Server.URL = url
	c.Server.RateLimit = roomtest.Pace
	c.Build.Name = "shop"
	c.Build.Components = comps
	c.Rules.CheckinInterval = 400 * time.Millisecond
	c.Rules.MaxBuildTime = 0
	c.Journal = filepath.Join(dir, "journal")
	c.Record = filepath.Join(dir, "session.txt")
	c.HTTP = ""
	return c
}

// runBot runs a bot until the returned stop is called; stop returns Run's
// error.
func runBot(t *testing.T, cfg *config.Config, id *agentchat.Identity, more ...func(*Options)) (b *Bot, stop func() error) {
	t.Helper()
	opts := Options{Config: cfg, Identity: id, Logger: zerolog.Nop(), ShutdownGrace: 2 * time.Second}
	for _, f := range more {
		f(&opts)
	}
	b, err := New(opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- b.Run(ctx) }()
	var stopped bool
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-errc:
			return err
		case <-time.After(15 * time.Second):
			t.Fatal("the bot did not stop")
			return nil
		}
	}
	t.Cleanup(func() { _ = stop() })
	return b, stop
}

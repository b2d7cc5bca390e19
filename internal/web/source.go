package web

import (
	"context"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/bot"
)

// Source is what the server asks about the build; *bot.Bot is one. Every
// method must be safe from any goroutine.
type Source interface {
	View(ctx context.Context) (coordinator.View, error)
	Health() bot.Health
	RoomStats() agentchat.Stats
}

package web

import (
	"time"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/protocol"
)

// heard is the event of one message, as the bot hands it to Observe.
func heard(at time.Time, from, content string) *coordinator.Event {
	ev := coordinator.Heard(coordinator.Message{From: from, Content: content, At: at})
	return &ev
}

// tick is a clock event, after which the engine may say things unasked.
func tick(at time.Time) *coordinator.Event {
	return &coordinator.Event{Kind: coordinator.KindTick, At: at}
}

// said is what the engine said at at.
func said(at time.Time, rs ...protocol.Reply) []coordinator.Reply {
	out := make([]coordinator.Reply, len(rs))
	for i, r := range rs {
		out[i] = coordinator.Reply{Reply: r, At: at}
	}
	return out
}

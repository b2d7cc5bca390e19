package sim

import (
	"time"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/node"
)

// Bot is foreman on a stage: what the bot does with its node, without the
// journal and the room connection. Every message heard goes to the node
// (which fires the timers due by then first), every reply goes to the
// room, and the node is woken at its next deadline.
type Bot struct {
	id    string
	node  *node.Node
	stage *Stage
	armed time.Time // the deadline a wake-up is scheduled for
}

// NewBot puts foreman's node n on stage as id: it hears the room from now
// on. The caller starts the build (a KindStart event) and then Flushes.
func NewBot(stage *Stage, id, name string, n *node.Node) *Bot {
	b := &Bot{id: id, node: n, stage: stage}
	stage.Listen(id, name, b.Hear)
	return b
}

// Node is the bot's node (its engine: Node().Engine()).
func (b *Bot) Node() *node.Node { return b.node }

// Hear is a message of the room's.
func (b *Bot) Hear(m agentchat.Message) {
	b.node.Hear(coordinator.Message{ID: m.ID, From: m.From, Verified: m.Verified, At: m.TS, Content: m.Content})
	b.Flush()
}

// Flush says what the node said, and schedules a wake-up at its next
// deadline (an earlier wake-up that finds nothing due does nothing).
func (b *Bot) Flush() {
	rd := b.node.Ready()
	lines := make([]string, len(rd.Messages))
	seqs := make([]uint64, len(rd.Messages))
	for i, l := range rd.Messages {
		lines[i], seqs[i] = l.Text, l.Seq
	}
	// The stage loses nothing: what is said is as good as delivered.
	b.stage.Say(b.id, lines...)
	b.node.Confirm(seqs, "", b.stage.Now())
	if d, ok := b.node.Engine().NextDeadline(); ok && !d.Equal(b.armed) {
		b.armed = d
		b.stage.At(d, func() {
			b.node.Wake(b.stage.Now())
			b.Flush()
		})
	}
}

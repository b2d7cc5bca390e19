package vopr

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/node"
	"github.com/agentforeman/foreman/protocol"
	"github.com/agentforeman/foreman/transcript"
)

// Record runs one seed and writes what foreman's journal holds as a
// transcript `foreman replay` reads (what foreman heard, when, with its
// restarts as !downtime, and what it said), and, if room is set, the room
// as everyone saw it.
func Record(opts Options, history, room io.Writer) (Result, error) {
	w := newWorld(opts)
	w.run()
	if err := w.writeTranscript(history); err != nil {
		return w.result(), err
	}
	if room != nil {
		if err := w.writeRoom(room); err != nil {
			return w.result(), err
		}
	}
	return w.result(), nil
}

// writeTranscript replays the journal's history through a node that
// records, as internal/bot's recorder does live.
func (w *world) writeTranscript(out io.Writer) error {
	tw := transcript.NewWriter(out, w.startCfg)
	tw.Comment(fmt.Sprintf("foreman sim, seed %d: the journal's history; run it again with: foreman sim --seeds 1 --from %d -v", w.seed, w.seed))
	tw.Comment("a message of several lines is written a line each: replayed so, its malformed lines get an ERROR each, not one for the message")
	if v := w.violation; v != nil {
		tw.Comment(fmt.Sprintf("at step %d (%s): %s: %s", v.Step, v.At, v.Invariant, strings.ReplaceAll(v.Detail, "\n", " ")))
	}
	var n *node.Node
	var last time.Time
	observe := func(ev *coordinator.Event, said []coordinator.Reply) {
		now := n.Engine().Now()
		before := last
		last = now
		start, _ := n.Engine().StartedAt()
		since := func(t time.Time) time.Duration { return t.Sub(start) }
		switch ev.Kind {
		case coordinator.KindMessage:
			tw.Named(since(now), ev.Msg.From, ev.Msg.Name)
			for l := range protocol.Lines(ev.Msg.Content) {
				tw.Heard(since(now), ev.Msg.From, l)
			}
		case coordinator.KindRecover:
			if now.After(before) {
				tw.Downtime(since(before), since(now))
			}
		case coordinator.KindReload:
			tw.Reload(since(ev.At), ev.Components, ev.Roles)
		case coordinator.KindOffline:
			tw.Offline(since(now))
		case coordinator.KindOnline:
			tw.Online(since(now))
		case coordinator.KindGap:
			tw.Gap(since(now), since(ev.Since), since(ev.Until))
		case coordinator.KindMembers:
			tw.Members(since(now), ev.Members)
		}
		for _, s := range said {
			tw.Said(since(s.At), []string{s.Text})
		}
	}
	var err error
	n, err = node.Open(node.Config{Engine: w.startCfg, SnapshotEvery: -1, Observe: observe})
	if err != nil {
		return err
	}
	for _, e := range w.check.chain {
		if e.Event != nil {
			n.Step(*e.Event)
		}
		n.Ready()
	}
	return tw.Flush()
}

// writeRoom writes every message the room took, in its order.
func (w *world) writeRoom(out io.Writer) error {
	names := map[string]string{w.foremanID: "foreman"}
	for _, a := range w.agents {
		names[a.id] = a.name
	}
	for _, p := range w.room.log {
		who := names[p.from]
		if who == "" {
			who = p.from
		}
		for i, l := range strings.Split(p.content, "\n") {
			mark := " "
			if i == 0 {
				mark = ">"
			}
			if _, err := fmt.Fprintf(out, "%s %-8s %s %s %s\n", w.since(p.ts), who, p.id, mark, l); err != nil {
				return err
			}
		}
	}
	return nil
}

package demo

import (
	"context"
	"strings"
	"time"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/protocol"
)

// watcher is a silent member of the room that records and prints what is
// said there: the log is the room as every agent sees it, in its order.
type watcher struct {
	client *agentchat.Client
	joined chan struct{}
	s      *show
}

func (s *show) watcher(url string, rate time.Duration) (*watcher, error) {
	id, err := agentchat.NewIdentity(watcherName)
	if err != nil {
		return nil, err
	}
	c := agentchat.New(agentchat.Config{URL: url, Channel: channel, Identity: id, RateLimit: rate,
		Logger: s.o.Logger.With().Str("part", watcherName).Logger()})
	return &watcher{client: c, joined: make(chan struct{}), s: s}, nil
}

func (w *watcher) run(ctx context.Context) error {
	runErr := make(chan error, 1)
	go func() { runErr <- w.client.Run(ctx) }()
	in := false
	for ev := range w.client.Events() {
		switch ev := ev.(type) {
		case agentchat.Joined:
			if !in {
				in = true
				close(w.joined)
				continue
			}
			for _, m := range ev.History {
				if !m.Notice {
					w.s.heard(m)
				}
			}
		case agentchat.Message:
			if !ev.Notice {
				w.s.heard(ev)
			}
		}
	}
	return <-runErr
}

func splitLines(content string) []string {
	var out []string
	for l := range protocol.Lines(content) {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// firstWord is a line's first word: the demo reads the room as any agent
// does, from the text.
func firstWord(line string) string {
	w, _, _ := strings.Cut(strings.TrimSpace(line), " ")
	return w
}

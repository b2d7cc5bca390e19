package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/mcpagent"
)

// agentJSON is foreman agent --json: the room on stdout as one JSON object
// per line (mcpagent.Event: raw ids, the room's times, foreman's replies
// read into their parts), each line read on stdin said in the room. Only
// JSON goes to stdout; notices go to notes (stderr). It leaves at /quit or
// the end of stdin, once what was typed has reached the room.
func agentJSON(ctx context.Context, stdin io.Reader, stdout, notes io.Writer, cfg agentchat.Config, coord string, joined func()) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	var writeErr error
	emit := func(e mcpagent.Event) {
		if writeErr == nil {
			if writeErr = enc.Encode(e); writeErr != nil {
				cancel() // nobody reads us any more
			}
		}
	}
	rd := mcpagent.Reader{Self: cfg.Identity.AgentID(), Coordinator: coord, Name: cfg.Name}
	emit(mcpagent.Event{Kind: mcpagent.KindHello, ID: rd.Self, Name: cfg.Name, URL: cfg.URL, Channel: cfg.Channel})

	client := agentchat.New(cfg)
	runErr := make(chan error, 1)
	go func() { runErr <- client.Run(ctx) }()
	typed := make(chan string)
	go func() {
		defer close(typed)
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			select {
			case typed <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	var seq uint64
	sent := map[uint64]string{} // lines not yet echoed by the room
	in, leaving := false, false
	var giveUp <-chan time.Time
	leave := func() {
		typed, leaving = nil, true
		giveUp = time.After(10 * time.Second)
		if len(sent) == 0 {
			cancel()
		}
	}
	events := client.Events()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return firstErr(<-runErr, writeErr)
			}
			switch ev := ev.(type) {
			case agentchat.Joined:
				if !in {
					in = true
					joined()
				}
				emit(mcpagent.Event{Kind: mcpagent.KindJoined, TS: ev.TS, ID: rd.Self, Channel: ev.Channel, Agents: mcpagent.Agents(ev.Agents)})
				for _, m := range ev.History {
					for _, e := range rd.Message(m) {
						emit(e)
					}
				}
			case agentchat.Message:
				for _, e := range rd.Message(ev) {
					emit(e)
				}
			case agentchat.Delivered:
				for _, n := range ev.Seqs {
					if l, ok := sent[n]; ok {
						emit(rd.Said(l, ev, cfg.Name))
						delete(sent, n)
					}
				}
				if leaving && len(sent) == 0 {
					cancel()
				}
			case agentchat.AgentJoined:
				emit(mcpagent.Event{Kind: mcpagent.KindAgentJoined, Channel: ev.Channel, Agent: &mcpagent.Agent{ID: ev.Agent.ID, Name: ev.Agent.Name}})
			case agentchat.AgentLeft:
				emit(mcpagent.Event{Kind: mcpagent.KindAgentLeft, Channel: ev.Channel, Agent: &mcpagent.Agent{ID: ev.Agent.ID, Name: ev.Agent.Name}})
			case agentchat.Disconnected:
				e := mcpagent.Event{Kind: mcpagent.KindDisconnected}
				if ev.Err != nil {
					e.Error = ev.Err.Error()
				}
				emit(e)
			}
		case l, ok := <-typed:
			if !ok {
				leave()
				continue
			}
			switch l = strings.TrimSpace(l); {
			case l == "":
			case l == "/quit":
				leave()
			case strings.HasPrefix(l, "/"):
				fmt.Fprintf(notes, "%s: not sent (lines starting with / are never sent; /quit leaves)\n", strings.Fields(l)[0])
			default:
				seq++
				sent[seq] = l
				client.Send(agentchat.Line{Seq: seq, Text: l})
			}
		case <-giveUp:
			fmt.Fprintf(notes, "leaving with %d lines the room never confirmed\n", len(sent))
			cancel()
		case <-ctx.Done():
			return firstErr(<-runErr, writeErr)
		}
	}
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// configCoordinator is foreman's sender id as far as the config tells:
// --coordinator, else server.identity's when a config file names it and
// the file is there; "" leaves it to be learned from the room.
func configCoordinator(c *config.Config, flag string) string {
	if flag != "" || c.File == "" {
		return flag
	}
	if id, err := agentchat.LoadIdentity(c.Server.Identity); err == nil {
		return id.AgentID()
	}
	return ""
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

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
	j := &jsonTalker{notes: notes, name: cfg.Name,
		rd: mcpagent.Reader{Self: cfg.Identity.AgentID(), Coordinator: coord, Name: cfg.Name}}
	j.emit = func(e mcpagent.Event) {
		if j.writeErr == nil {
			if j.writeErr = enc.Encode(e); j.writeErr != nil {
				cancel() // nobody reads us any more
			}
		}
	}
	j.emit(mcpagent.Event{Kind: mcpagent.KindHello, ID: j.rd.Self, Name: cfg.Name, URL: cfg.URL, Channel: cfg.Channel})
	err := converse(ctx, stdin, notes, cfg, j, joined)
	return firstErr(err, j.writeErr)
}

// jsonTalker is foreman agent --json's side of converse.
type jsonTalker struct {
	rd       mcpagent.Reader
	notes    io.Writer
	name     string
	emit     func(mcpagent.Event)
	writeErr error
}

func (j *jsonTalker) heard(ev agentchat.Event) {
	switch ev := ev.(type) {
	case agentchat.Joined:
		j.emit(mcpagent.Event{Kind: mcpagent.KindJoined, TS: ev.TS, ID: j.rd.Self, Channel: ev.Channel, Agents: mcpagent.Agents(ev.Agents)})
		for _, m := range ev.History {
			j.emitAll(j.rd.Message(m))
		}
	case agentchat.Message:
		j.emitAll(j.rd.Message(ev))
	case agentchat.AgentJoined:
		j.emit(mcpagent.Event{Kind: mcpagent.KindAgentJoined, Channel: ev.Channel, Agent: &mcpagent.Agent{ID: ev.Agent.ID, Name: ev.Agent.Name}})
	case agentchat.AgentLeft:
		j.emit(mcpagent.Event{Kind: mcpagent.KindAgentLeft, Channel: ev.Channel, Agent: &mcpagent.Agent{ID: ev.Agent.ID, Name: ev.Agent.Name}})
	case agentchat.Disconnected:
		e := mcpagent.Event{Kind: mcpagent.KindDisconnected}
		if ev.Err != nil {
			e.Error = ev.Err.Error()
		}
		j.emit(e)
	}
}

func (j *jsonTalker) emitAll(es []mcpagent.Event) {
	for _, e := range es {
		j.emit(e)
	}
}

func (j *jsonTalker) typed(l string) (string, bool) {
	switch {
	case l == "/quit":
		return "", true
	case strings.HasPrefix(l, "/"):
		fmt.Fprintf(j.notes, "%s: not sent (lines starting with / are never sent; /quit leaves)\n", strings.Fields(l)[0])
		return "", false
	}
	return l, false
}

func (j *jsonTalker) said(l string, d agentchat.Delivered) { j.emit(j.rd.Said(l, d, j.name)) }

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

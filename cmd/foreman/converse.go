package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentforeman/foreman/agentchat"
)

// talker is how one front end of foreman agent (the chat client, --json)
// shows the room and reads what is typed; converse does the rest.
type talker interface {
	// heard is everything the room says but the echoes of our own lines.
	heard(ev agentchat.Event)
	// typed is a trimmed, non-empty line typed: the text to send, or "" to
	// send nothing; leave ends the conversation.
	typed(l string) (send string, leave bool)
	// said is a line of ours the room echoed: it was delivered then.
	said(l string, ev agentchat.Delivered)
}

// leaveWait bounds how long a leaving agent waits for the room to echo
// what was typed before it.
const leaveWait = 10 * time.Second

// converse joins the room and talks until ctx ends, or the agent leaves
// (at the end of stdin, or when t says so) once the room has echoed every
// line typed, or leaveWait has passed. Each line typed is its own message.
// joined is called once, at the first join.
func converse(ctx context.Context, stdin io.Reader, notes io.Writer, cfg agentchat.Config, t talker, joined func()) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
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
		if err := sc.Err(); err != nil {
			fmt.Fprintf(notes, "stopped reading what is typed: %v\n", err)
		}
	}()
	var seq uint64
	sent := map[uint64]string{} // lines not yet echoed by the room
	in, leaving := false, false
	var giveUp <-chan time.Time
	leave := func() {
		typed, leaving = nil, true
		giveUp = time.After(leaveWait)
		if len(sent) == 0 {
			cancel()
		}
	}
	events := client.Events()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return <-runErr
			}
			if d, ok := ev.(agentchat.Delivered); ok {
				for _, n := range d.Seqs {
					if l, ok := sent[n]; ok {
						t.said(l, d)
						delete(sent, n)
					}
				}
				if leaving && len(sent) == 0 {
					cancel()
				}
				continue
			}
			if _, ok := ev.(agentchat.Joined); ok && !in {
				in = true
				joined()
			}
			t.heard(ev)
		case l, ok := <-typed:
			if !ok {
				leave()
				continue
			}
			if l = strings.TrimSpace(l); l == "" {
				continue
			}
			send, quit := t.typed(l)
			if quit {
				leave()
				continue
			}
			if send != "" {
				seq++
				sent[seq] = send
				client.Send(agentchat.Line{Seq: seq, Text: send})
			}
		case <-giveUp:
			fmt.Fprintf(notes, "leaving with %d lines the room never confirmed\n", len(sent))
			cancel()
		case <-ctx.Done():
			return <-runErr
		}
	}
}

package up

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/config"
)

// Close lets go of everything Prepare opened, for an up that does not
// run.
func (u *Stack) Close() {
	if u.gate != nil {
		_ = u.gate.Close()
	}
	if u.host != nil {
		_ = u.host.Close()
	}
	if u.bot != nil {
		u.bot.Close()
	}
	if u.boardLn != nil {
		u.boardLn.Close()
	}
	if u.roomLn != nil {
		u.roomLn.Close()
	}
	if u.room != nil {
		u.room.Close()
	}
}

// Run starts every part, says on out how to join once all are in the
// room, and stops them in order when ctx ends or one of them fails: the
// host, then foreman, then the board, then the room.
func (u *Stack) Run(ctx context.Context, out io.Writer) error {
	boardCtx, stopBoard := context.WithCancel(context.Background())
	defer stopBoard()
	boardDone := make(chan struct{})
	if u.boardLn != nil {
		u.board.Attach(u.bot)
		go func() {
			defer close(boardDone)
			if err := u.board.Serve(boardCtx, u.boardLn); err != nil {
				u.log.Error().Err(err).Msg("the board's server failed")
			}
		}()
	} else {
		close(boardDone)
	}
	botCtx, stopBot := context.WithCancel(context.Background())
	defer stopBot()
	botDone := make(chan error, 1)
	go func() { botDone <- config.RoomError(u.bot.Run(botCtx), u.c) }()
	hostCtx, stopHost := context.WithCancel(context.Background())
	defer stopHost()
	var hostDone chan error
	if u.host != nil {
		hostDone = make(chan error, 1)
		go func() { hostDone <- u.host.Serve(hostCtx, u.c, u.log.With().Str("part", "host").Logger(), u.stderr) }()
	}

	var failed error
	fail := func(part string, err error) {
		if err == nil {
			err = errors.New(strings.TrimSpace(part + " stopped"))
			if part == "" {
				err = errors.New("foreman stopped")
			}
			part = ""
		}
		if failed == nil && part != "" {
			err = fmt.Errorf("%s: %w", part, err)
		}
		if failed == nil {
			failed = err
		}
	}
	// The agents start once foreman (and the host) are in the room, and
	// stop first.
	agentsCtx, stopAgents := context.WithCancel(context.Background())
	defer stopAgents()
	var agentsDone chan struct{}
	ready := u.here.ready
	for running := true; running; {
		select {
		case <-ready:
			ready = nil
			if u.team != nil {
				agentsDone = make(chan struct{})
				go func() { defer close(agentsDone); u.team.Run(agentsCtx) }()
			}
			u.printReady(ctx, out)
		case err := <-botDone:
			botDone = nil
			fail("", err) // foreman's errors say what they are about
			running = false
		case err := <-hostDone:
			hostDone = nil
			fail("foreman host", err)
			running = false
		case <-ctx.Done():
			running = false
		}
	}
	if agentsDone != nil {
		u.log.Info().Msg("stopping: the agents first, then the host, then foreman, then the board and the room")
		stopAgents()
		<-agentsDone
		u.log.Info().Msg("the agents have stopped")
	} else {
		u.log.Info().Msg("stopping: the host first, then foreman, then the board and the room")
	}
	if u.gate != nil {
		_ = u.gate.Close() // no agent pushes now
		u.gate = nil
	}
	stopHost()
	if hostDone != nil {
		if err := <-hostDone; err != nil {
			fail("foreman host", err)
		}
	}
	if u.host != nil {
		if err := u.host.Close(); err != nil {
			fail("foreman host", err)
		}
		u.log.Info().Msg("the host has stopped: no check runs, its ledger is synced and closed")
	}
	stopBot()
	if botDone != nil {
		if err := <-botDone; err != nil {
			fail("", err)
		}
	}
	u.log.Info().Msg("foreman has stopped: its journal is flushed and closed")
	stopBoard()
	<-boardDone
	if u.room != nil {
		u.room.Close()
		u.log.Info().Msg("the room is closed")
	}
	return failed
}

// presence follows who is in the channel, from foreman's side: up is ready
// once foreman is in, and the host too when there is one. It runs in the
// bot's goroutine.
type presence struct {
	host             string
	joined, hostHere bool
	ready            chan struct{}
	said             bool
}

func (p *presence) see(ev agentchat.Event) {
	switch ev := ev.(type) {
	case agentchat.Joined:
		p.joined = true
		for _, a := range ev.Agents {
			p.hostHere = p.hostHere || a.ID == p.host
		}
	case agentchat.AgentJoined:
		p.hostHere = p.hostHere || ev.Agent.ID == p.host
	case agentchat.AgentLeft:
		p.hostHere = p.hostHere && ev.Agent.ID != p.host
	case agentchat.Disconnected:
		p.joined = false
	}
	if !p.said && p.joined && (p.host == "" || p.hostHere) {
		p.said = true
		close(p.ready)
	}
}

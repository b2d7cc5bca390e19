package chaos

import (
	"context"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat/server"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// TestServerRestarts restarts the room's server again and again during a
// build. A restarted stock server has lost its history, so lines said just
// before a restart may never reach someone; agents therefore claim again
// when offered and audit when told an audit is overdue. The build must
// still complete, with every component merged and no component owned by
// two agents at once.
func TestServerRestarts(t *testing.T) {
	restarts := scale("CHAOS_RESTARTS", 3, 12)
	rng := rand.New(rand.NewPCG(7, 7))
	addr := freeAddr(t)
	start := func() *server.Server {
		cfg := server.DefaultConfig()
		cfg.Listen, cfg.Channels, cfg.RateLimit, cfg.BufferSize = addr, []string{"#build"}, roomtest.Pace, 5000
		var srv *server.Server
		var err error
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if srv, err = server.Start(context.Background(), cfg); err == nil {
				return srv
			}
		}
		require.NoError(t, err)
		return nil
	}
	srv := start()
	room := &roomtest.Room{Server: srv}
	t.Cleanup(func() { room.Server.Close() })

	aud := room.Join(t, "aud")
	bot := newBotProcess(t, room, []string{aud.ID}, "")
	bot.setRules("checkin_interval: 1s\n  audit_timeout: 2s")
	obs := room.Join(t, "observer")
	said := observe(obs, bot.id)
	persistentAuditor(aud, bot.id)
	for _, c := range bookshop {
		persistentBuilder(room.Join(t, "b-"+c.Name), bot.id, c.Name)
	}
	bot.start()

	for i := 0; i < restarts; i++ {
		time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond)
		room.Server.Close()
		time.Sleep(time.Duration(rng.IntN(200)) * time.Millisecond)
		room.Server = start()
	}
	// What was said before a restart may be gone: ask for the board.
	var merged int
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		obs.Say("STATUS")
		time.Sleep(300 * time.Millisecond)
		merged = countMerged(said.said())
		if merged == len(bookshop) {
			break
		}
	}
	require.Equal(t, len(bookshop), merged, "every component merged after %d server restarts; said:\n%s\nlogs:\n%s",
		restarts, strings.Join(said.said(), "\n"), bot.logs())
	require.NoError(t, bot.stop(), bot.logs())
	assertOneOwnerAtATime(t, said.said())
	t.Logf("%d server restarts; %d lines said; replies said in each life of the bot: %v", restarts, len(said.said()), bot.saidPerLife())
}

// countMerged reads the latest full STATUS in lines: how many components
// it shows merged.
func countMerged(lines []string) int {
	state := map[string]string{}
	for _, l := range lines {
		if f := strings.Fields(l); len(f) >= 3 && f[0] == "STATUS" {
			state[f[1]] = f[2]
		}
	}
	n := 0
	for _, s := range state {
		if s == "merged" {
			n++
		}
	}
	return n
}

// assertOneOwnerAtATime checks that no component was ACKed to an agent
// while another still had it: between two ACKs of one component to
// different agents something must have taken it from the first.
func assertOneOwnerAtATime(t *testing.T, lines []string) {
	t.Helper()
	owner := map[string]string{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		switch f[0] {
		case "ACK":
			if o := owner[f[1]]; o != "" && o != f[2] {
				t.Errorf("%s ACKed to %s while %s had it", f[1], f[2], o)
			}
			owner[f[1]] = f[2]
		case "TIMEOUT", "RETRY":
			owner[f[1]] = ""
		case "MERGED":
			owner[f[1]] = ""
		}
	}
}

// persistentBuilder keeps claiming comp until it has it, works when ACKed,
// and starts over when timed out. A restarting server loses its history,
// so any line (a TASKS, a CLAIM, an ACK) may never arrive; claiming again
// is harmless by contract (REJECT while not claimable, ACK again for the
// owner), so the builder does not rely on any one line.
func persistentBuilder(p *roomtest.Peer, bot, comp string) {
	go func() {
		working, done := false, false
		retry := time.NewTicker(700 * time.Millisecond)
		defer retry.Stop()
		for {
			select {
			case l := <-p.Lines():
				if l.From != bot {
					continue
				}
				f := strings.Fields(l.Text)
				switch {
				case len(f) < 2 || f[1] != comp:
				case f[0] == "ACK" && len(f) > 2 && f[2] == p.ID && !working:
					working = true
					think()
					p.Say("PROGRESS " + comp + " 50")
					think()
					p.Say("READY " + comp + " pr/" + comp)
				case f[0] == "TIMEOUT":
					working = false
				case f[0] == "MERGED" || f[0] == "STATUS" && len(f) > 2 && f[2] == "merged":
					done = true
				}
			case <-retry.C:
				if !working && !done {
					p.Say("CLAIM " + comp)
				}
			}
		}
	}()
}

// persistentAuditor passes every review, and audits again when told an
// audit is overdue (its REVIEW may have been lost in a restart).
func persistentAuditor(p *roomtest.Peer, bot string) {
	go func() {
		for l := range p.Lines() {
			f := strings.Fields(l.Text)
			if l.From != bot || len(f) < 3 {
				continue
			}
			if f[0] == "REVIEW" || f[0] == "ESCALATE" && f[2] == "audit-overdue" {
				think()
				p.Say("AUDIT " + f[1] + " PASS")
			}
		}
	}()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	return addr
}

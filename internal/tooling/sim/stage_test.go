package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
)

var t0 = time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)

// record listens to a stage and writes what it hears as "+offset from: lines".
func record(s *Stage) *[]string {
	var out []string
	s.Listen("@log", "log", func(m agentchat.Message) {
		out = append(out, fmt.Sprintf("+%s %s: %s", m.TS.Sub(t0), m.FromName, strings.ReplaceAll(m.Content, "\n", " | ")))
	})
	return &out
}

func TestStageKeepsEachSendersPace(t *testing.T) {
	s := NewStage(t0, time.Second)
	heard := record(s)
	s.Listen("@a", "a", func(agentchat.Message) {})
	s.Listen("@b", "b", func(m agentchat.Message) {
		if m.From == "@a" && strings.HasPrefix(m.Content, "ping") {
			s.Say("@b", "pong")
		}
	})
	s.Say("@a", "ping 1")
	s.Say("@a", "ping 2")                                           // the same instant: the same message
	s.After(100*time.Millisecond, func() { s.Say("@a", "ping 3") }) // too soon: waits for the pace
	s.After(5*time.Second, func() { s.Say("@a", "later") })
	for s.Step() {
	}
	assert.Equal(t, []string{
		"+0s a: ping 1 | ping 2",
		"+0s b: pong",
		"+1s a: ping 3",
		"+1s b: pong",
		"+5s a: later",
	}, *heard)
	assert.Equal(t, t0.Add(5*time.Second), s.Now())
}

func TestStageRunsTiesInTheOrderScheduled(t *testing.T) {
	s := NewStage(t0, 0)
	var order []int
	s.After(time.Second, func() { order = append(order, 1) })
	s.After(0, func() {
		order = append(order, 0)
		s.After(time.Second, func() { order = append(order, 2) })
	})
	s.At(t0.Add(-time.Hour), func() { order = append(order, -1) }) // the past is now
	next, ok := s.Next()
	require.True(t, ok)
	assert.Equal(t, t0, next)
	for s.Step() {
	}
	assert.Equal(t, []int{0, -1, 1, 2}, order)
	_, ok = s.Next()
	assert.False(t, ok)
}

// TestStagePlaysParticipants runs a builder and an auditor against a tiny
// coordinator on a stage: the same scripts as in a live room, on a virtual
// clock, the same story on every run.
func TestStagePlaysParticipants(t *testing.T) {
	run := func() []string {
		s := NewStage(t0, 30*time.Second)
		heard := record(s)
		cfg := func(name string) Config {
			var seed [32]byte
			copy(seed[:], name)
			return Config{Name: name, Coordinator: "@fm", Minute: time.Minute, Seed: 7,
				Identity: agentchat.IdentityFromSeed(name, seed)}
		}
		b, err := NewBuilder(cfg("ada"), Builder{React: time.Minute})
		require.NoError(t, err)
		a, err := NewAuditor(cfg("iris"), Auditor{Delay: 2 * time.Minute})
		require.NoError(t, err)
		// The coordinator: TASKS, then an ACK for a claim, a REVIEW for
		// READY, MERGED for a passing AUDIT.
		s.Listen("@fm", "fm", func(m agentchat.Message) {
			switch w := strings.Fields(m.Content); w[0] {
			case "CLAIM":
				s.Say("@fm", "ACK "+w[1]+" "+m.From)
			case "READY":
				s.Say("@fm", "REVIEW "+w[1]+" "+m.From+" "+w[2])
			case "AUDIT":
				s.Say("@fm", "MERGED "+w[1])
			}
		})
		s.Add(b)
		s.Add(a)
		s.Say("@fm", "TASKS db")
		for i := 0; i < 100 && s.Step(); i++ {
			if strings.HasSuffix((*heard)[len(*heard)-1], "MERGED db") {
				break
			}
		}
		return *heard
	}
	story := run()
	ada := "@099fb1348ec1f42f" // from its seed
	assert.Equal(t, []string{
		"+0s fm: TASKS db",
		"+1m3.41044606s ada: CLAIM db", // React, give or take a tenth
		"+1m3.41044606s fm: ACK db " + ada,
		"+3m46.213359622s ada: PROGRESS db 25", // a Step apart, give or take
		"+6m59.361187973s ada: PROGRESS db 50",
		"+9m57.506862322s ada: PROGRESS db 75",
		"+13m8.120099456s ada: READY db ada/db",
		"+13m8.120099456s fm: REVIEW db " + ada + " ada/db",
		"+15m18.612855719s iris: AUDIT db PASS",
		"+15m18.612855719s fm: MERGED db",
	}, story)
	assert.Equal(t, story, run(), "the same story every time")

	b, err := NewBuilder(Config{Name: "x"}, Builder{})
	require.NoError(t, err)
	NewStage(t0, 0).Add(b)
	assert.ErrorContains(t, b.Run(t.Context()), "on a stage", "a participant on a stage is never run")
}

package chaos

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// TestFlood has one agent flood a room paced like a stock server (one
// message a second per sender) with messages of 1,100 lines foreman must
// refuse and of 20,000 malformed lines: foreman reads at most
// coordinator.MaxCommands lines of each and answers each with at most one
// ERROR. Meanwhile honest builders claim components. Every honest ACK must go out in the first message foreman
// sends after hearing the claim, or the second if one was already on its
// way: the flood delays nobody by more than one pacing period.
func TestFlood(t *testing.T) {
	claims := scale("CHAOS_FLOOD_CLAIMS", 4, 12)
	room := roomtest.StartRate(t, time.Second)
	var comps []coordinator.Component
	for i := range claims {
		comps = append(comps, coordinator.Component{Name: fmt.Sprintf("h%d", i)})
	}
	bot := newBotProcess(t, room, nil, "")
	bot.setComponents(comps)
	obs := room.Join(t, "observer")
	flooder := room.Join(t, "flooder")
	honest := make([]*roomtest.Peer, claims)
	for i := range honest {
		honest[i] = room.Join(t, fmt.Sprintf("honest%d", i))
	}
	heard := &roomLog{}
	go func() {
		for l := range obs.Lines() {
			heard.add(l)
		}
	}()
	bot.start()
	require.Eventually(t, func() bool { return heard.has(bot.id, "TASKS") }, 20*time.Second, 50*time.Millisecond)

	stop := make(chan struct{})
	flooded, floods := 0, 0
	var floodDone sync.WaitGroup
	floodDone.Add(1)
	go func() { // a message a second of 1,100 or 20,000 lines
		defer floodDone.Done()
		refused := make([]string, 1100)
		for i := range refused {
			refused[i] = fmt.Sprintf("PROGRESS h0 %d flood", 1000+i)
		}
		malformed := strings.Repeat("CLAIM !\n", 20000)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if flooder.Queued() == 0 {
				if floods%2 == 0 {
					flooder.SayLines(refused)
					flooded += len(refused)
				} else {
					flooder.Say(malformed)
					flooded += 20000
				}
				floods++
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	rng := rand.New(rand.NewPCG(3, 3))
	for i, p := range honest {
		time.Sleep(time.Duration(500+rng.IntN(1500)) * time.Millisecond)
		p.Say(fmt.Sprintf("CLAIM h%d", i))
	}
	require.Eventually(t, func() bool {
		for i, p := range honest {
			if !heard.has(bot.id, fmt.Sprintf("ACK h%d %s", i, p.ID)) {
				return false
			}
		}
		return true
	}, 60*time.Second, 100*time.Millisecond, "every honest claim is ACKed")
	close(stop)
	floodDone.Wait()
	require.NoError(t, bot.stop(), bot.logs())

	lines := heard.all()
	var delays []time.Duration
	for i, p := range honest {
		claim := find(lines, p.ID, fmt.Sprintf("CLAIM h%d", i))
		ack := find(lines, bot.id, fmt.Sprintf("ACK h%d %s", i, p.ID))
		require.NotNil(t, claim)
		require.NotNil(t, ack)
		between := botMessages(lines, bot.id, claim.Msg, ack.Msg)
		assert.LessOrEqual(t, between, 2, "ACK h%d went out in foreman's message number %d after the claim", i, between)
		delays = append(delays, ack.At.Sub(claim.At))
	}
	errors, answers := 0, 0
	for _, l := range lines {
		if l.From == bot.id && strings.HasPrefix(l.Text, "ERROR "+flooder.ID) {
			errors++
		}
		if l.From == bot.id && strings.Contains(l.Text, " "+flooder.ID) {
			answers++
		}
	}
	assert.LessOrEqual(t, errors, floods, "at most one ERROR per flood message")
	assert.LessOrEqual(t, answers, floods*(coordinator.MaxCommands+1), "at most MaxCommands lines read per message")
	sort.Slice(delays, func(i, j int) bool { return delays[i] < delays[j] })
	t.Logf("flood: %d lines sent in %d messages, %d replies to the flooder (%d ERROR); %d honest claims, CLAIM-to-ACK %v (max %v)",
		flooded, floods, answers, errors, claims, delays, delays[len(delays)-1])
}

// roomLog is what an observer heard, safe to read while it listens.
type roomLog struct {
	mu    sync.Mutex
	lines []roomtest.Said
}

func (r *roomLog) add(l roomtest.Said) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, l)
}

func (r *roomLog) has(from, prefix string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return find(r.lines, from, prefix) != nil
}

func (r *roomLog) all() []roomtest.Said {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]roomtest.Said(nil), r.lines...)
}

func find(heard []roomtest.Said, from, prefix string) *roomtest.Said {
	for i := range heard {
		if heard[i].From == from && strings.HasPrefix(heard[i].Text, prefix) {
			return &heard[i]
		}
	}
	return nil
}

// botMessages counts foreman's messages after message number after, up to
// and including message number upTo.
func botMessages(heard []roomtest.Said, bot string, after, upTo int) int {
	seen := map[int]bool{}
	for _, l := range heard {
		if l.From == bot && l.Msg > after && l.Msg <= upTo {
			seen[l.Msg] = true
		}
	}
	return len(seen)
}

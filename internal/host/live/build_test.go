package live

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/tooling/sim"
)

// pusher is what a simulated builder does before READY: commit its
// component's file on its branch (on top of what the branch holds, rebased
// by the host or not, else on main) and push it.
func (w *world) pusher(builder string) func(c, branch string, fixes int) error {
	return func(c, branch string, fixes int) error {
		parent, err := w.repo.RevParse(bg, "refs/heads/"+branch)
		if err != nil {
			return err
		}
		old := parent
		if parent == "" {
			if parent, err = w.repo.RevParse(bg, "refs/heads/main"); err != nil {
				return err
			}
		}
		files := map[string]string{c + ".txt": fmt.Sprintf("%s, built by %s (after %d fixes)\n", c, builder, fixes)}
		oid, err := w.repo.CommitFiles(bg, parent, files, c+": the work", gitrepo.Author{Name: builder, Email: builder + "@example.com"})
		if err != nil {
			return err
		}
		return w.repo.UpdateRef(bg, "refs/heads/"+branch, oid, old, "push")
	}
}

// A 20-component build over WebSockets: foreman, foreman host on a real
// repository (max_parallel 4), five simulated builders who commit real
// files, and an auditor. It ends COMPLETE with main holding all 20, each
// landed once, and every tree main ever held passed the checks.
func TestTwentyComponentBuild(t *testing.T) {
	var comps []string
	for i := 1; i <= 20; i++ {
		c := fmt.Sprintf("c%02d", i)
		if i > 3 {
			c += fmt.Sprintf(":c%02d", i-3)
		}
		comps = append(comps, c)
	}
	audID, err := agentchat.NewIdentity("auditor")
	require.NoError(t, err)
	w := newWorld(t, worldOptions{components: comps, maxParallel: 4, auditor: audID.AgentID()})
	w.startHost()

	const minute = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(bg)
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	cfg := func(name string, i int) sim.Config {
		return sim.Config{URL: w.room.URL(), Channel: "#build", Name: name, Coordinator: w.foreman,
			Minute: minute, RateLimit: w.room.Rate(), Seed: uint64(i), Logger: zerolog.Nop()}
	}
	var parts []*sim.Participant
	for i := 1; i <= 5; i++ {
		name := fmt.Sprintf("sb%d", i)
		s := sim.DefaultBuilder()
		s.Push = w.pusher(name)
		p, err := sim.NewBuilder(cfg(name, i), s)
		require.NoError(t, err)
		parts = append(parts, p)
	}
	ac := cfg("auditor", 9)
	ac.Identity = audID
	aud, err := sim.NewAuditor(ac, sim.Auditor{Delay: time.Minute})
	require.NoError(t, err)
	parts = append(parts, aud)
	for _, p := range parts {
		wg.Add(1)
		go func() { defer wg.Done(); _ = p.Run(ctx) }()
	}

	deadline := time.After(5 * time.Minute)
	for len(w.said(w.foreman, "COMPLETE")) == 0 {
		select {
		case <-deadline:
			t.Fatalf("the build did not complete; the room said:\n%s", w.dump())
		case <-time.After(100 * time.Millisecond):
		}
	}
	files := strings.Fields(w.git("ls-tree", "--name-only", "main"))
	assert.Len(t, files, 20, "main holds all 20")
	for i := 1; i <= 20; i++ {
		assert.Contains(t, files, fmt.Sprintf("c%02d.txt", i))
		if !assert.Len(t, w.said(w.host, fmt.Sprintf("MERGED c%02d", i)), 1) {
			t.Log(w.dump())
		}
	}
	w.everyLandingPassed()
	t.Logf("main:\n%s", w.git("log", "--graph", "--oneline", "main"))
}

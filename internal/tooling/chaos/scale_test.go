package chaos

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/agentchat/server"
	"github.com/agentforeman/foreman/internal/cluster"
	"github.com/agentforeman/foreman/internal/tooling/natstest"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// TestClusterScale runs CLUSTER_SCALE builds of 20 components (make scale:
// 1,000) over three foreman processes sharing them through one NATS
// server, each build in its own channel of one embedded room with its own
// identity. It reports the memory per build led and, after kill -9 of the
// process leading the most, how long the two others take to lead all of
// its builds. Figures, not assertions: it fails only if the builds are
// not all led again.
func TestClusterScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("CLUSTER_SCALE"))
	if n <= 0 {
		t.Skip("set CLUSTER_SCALE=1000 (make scale) to run it")
	}
	lease := cluster.DefaultLease
	if v, err := time.ParseDuration(os.Getenv("CLUSTER_LEASE")); err == nil {
		lease = v
	}
	room := roomtest.StartWith(t, func(c *server.Config) {
		c.AllowUnverifiedCreate = true
		c.BufferSize = 50
		c.FloodFrames = 1 << 20
	})
	ns := natstest.Start(t)
	dir := t.TempDir()
	builds := filepath.Join(dir, "builds")
	require.NoError(t, os.MkdirAll(builds, 0o700))
	var comps strings.Builder
	for i := range 20 {
		fmt.Fprintf(&comps, "    - name: c%02d\n", i)
		if i > 0 {
			fmt.Fprintf(&comps, "      depends_on: [c%02d]\n", (i-1)/2)
		}
	}
	for i := range n {
		name := fmt.Sprintf("b%04d", i)
		id, err := agentchat.NewIdentity(name)
		require.NoError(t, err)
		idFile := filepath.Join(dir, "ids", name+".json")
		require.NoError(t, os.MkdirAll(filepath.Dir(idFile), 0o700))
		require.NoError(t, id.Save(idFile))
		require.NoError(t, os.WriteFile(filepath.Join(builds, name+".yaml"), fmt.Appendf(nil,
			"server:\n  url: %s\n  channel: \"#%s\"\n  identity: %s\n  rate_limit: %s\n  flood_limit: -1\nbuild:\n  name: %s\n  components:\n%s",
			room.URL(), name, idFile, room.Rate(), name, comps.String()), 0o600))
	}
	f := &foremen{t: t, dir: dir}
	for i := range 3 {
		m := &member{f: f, name: fmt.Sprintf("p%d", i+1), dir: filepath.Join(dir, fmt.Sprintf("p%d", i+1))}
		require.NoError(t, os.MkdirAll(m.dir, 0o700))
		m.config = filepath.Join(m.dir, "foreman.yaml")
		require.NoError(t, os.WriteFile(m.config, fmt.Appendf(nil,
			"cluster:\n  nats: %s\n  lease: %s\n  id: %s\n  capacity: %d\n  builds: %s\nhttp:\n  listen: \"\"\nlog:\n  format: json\n  level: info\n",
			ns.URL(), lease, m.name, n, builds), 0o600))
		f.procs = append(f.procs, m)
		t.Cleanup(m.kill)
	}
	ls := followLeases(t, ns.URL(), cluster.Auth{})
	began := time.Now()
	for _, m := range f.procs {
		m.start()
	}
	held := func() map[string]int {
		out := map[string]int{}
		for _, o := range ls.w.All() {
			if o.Rec.Holder != "" {
				out[o.Rec.Holder]++
			}
		}
		return out
	}
	waitAll := func(not string, timeout time.Duration) (map[string]int, bool) {
		deadline := time.Now().Add(timeout)
		for time.Now().Before(deadline) {
			h := held()
			total := 0
			for p, c := range h {
				if p != not {
					total += c
				}
			}
			if total == n {
				return h, true
			}
			time.Sleep(20 * time.Millisecond)
		}
		return held(), false
	}
	h, ok := waitAll("", 10*time.Minute)
	require.True(t, ok, "not every build was led: %v\n%s", h, f.logs())
	t.Logf("%d builds of 20 components led by 3 processes after %v: %v", n, time.Since(began).Round(time.Millisecond), h)
	time.Sleep(2 * lease) // settle: every bot in its room
	var rss int64
	for _, m := range f.procs {
		kb := rssKB(m.cmd.Process.Pid)
		rss += kb
		t.Logf("%s leads %d builds in %d MiB resident: %.0f KiB per build", m.name, h[m.name], kb/1024, float64(kb)/float64(max(1, h[m.name])))
	}
	t.Logf("memory per build led: %.0f KiB (%d MiB resident over all three)", float64(rss)/float64(n), rss/1024)

	victim := f.procs[0]
	for _, m := range f.procs {
		if h[m.name] > h[victim.name] {
			victim = m
		}
	}
	victim.kill()
	killed := time.Now()
	h2, ok := waitAll(victim.name, 10*time.Minute)
	require.True(t, ok, "the survivors did not take every build over: %v\n%s", h2, f.logs())
	t.Logf("kill -9 of %s (%d builds): the two others lead every build %v later (lease %v): %v",
		victim.name, h[victim.name], time.Since(killed).Round(time.Millisecond), lease, h2)
	parts := map[string][]time.Duration{}
	for _, m := range f.procs {
		if m != victim {
			for k, v := range takeovers(m.logPath(1), killed) {
				parts[k] = append(parts[k], v...)
			}
		}
	}
	for _, k := range []string{"took", "lease", "log", "bot"} {
		t.Logf("each takeover after the kill, %s: p50 %v, p99 %v, max %v (%d)", k,
			percentile(parts[k], 50).Round(time.Millisecond), percentile(parts[k], 99).Round(time.Millisecond),
			percentile(parts[k], 100).Round(time.Millisecond), len(parts[k]))
	}
}

// takeovers reads, from a foreman's JSON log, how long each takeover after
// since took ("leading the build": took, in all; lease, taking it; log,
// fencing and reading the log; bot, starting the bot; in milliseconds).
func takeovers(path string, since time.Time) map[string][]time.Duration {
	data, _ := os.ReadFile(path)
	out := map[string][]time.Duration{}
	for _, l := range strings.Split(string(data), "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(l), &e) != nil || e["message"] != "leading the build" {
			continue
		}
		at, _ := time.Parse(time.RFC3339, fmt.Sprint(e["time"]))
		if at.Before(since.Truncate(time.Second)) {
			continue
		}
		for _, k := range []string{"took", "lease", "log", "bot"} {
			if ms, ok := e[k].(float64); ok {
				out[k] = append(out[k], time.Duration(ms*float64(time.Millisecond)))
			}
		}
	}
	return out
}

// rssKB is a process's resident memory in KiB.
func rssKB(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb
		}
	}
	return 0
}

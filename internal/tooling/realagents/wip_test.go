package realagents

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// hostBuild is foreman serve, foreman run and foreman host, the real
// binaries, on a bare repository, with scripted peers for builders, an
// auditor and a watcher that keeps every line.
type hostBuild struct {
	t       *testing.T
	dir     string
	repo    *gitrepo.Repo
	foreman string
	host    string
	peers   map[string]*roomtest.Peer
	hostLog *roomtest.SyncBuffer // foreman host's stderr, shown when a wait is in vain
	url     string               // the room
	rate    time.Duration        // its rate limit

	mu    sync.Mutex
	lines []roomtest.Said
}

func startHostBuild(t *testing.T, rules, check string, comps []string, builders ...string) *hostBuild {
	t.Helper()
	return startHostBuildWith(t, "", rules, check, comps, builders...)
}

// startHostBuildWith is startHostBuild with more of the host's settings
// (YAML lines under host:).
func startHostBuildWith(t *testing.T, hostLines, rules, check string, comps []string, builders ...string) *hostBuild {
	t.Helper()
	b := &hostBuild{t: t, dir: t.TempDir(), peers: map[string]*roomtest.Peer{}}
	ctx := context.Background()
	var err error
	b.repo, err = gitrepo.Init(ctx, filepath.Join(b.dir, "shop.git"), "main", true)
	require.NoError(t, err)
	main, err := b.repo.RevParse(ctx, "refs/heads/main")
	require.NoError(t, err)
	base, err := b.repo.CommitFiles(ctx, main, map[string]string{"shared.txt": "one\ntwo\nthree\n"}, "base", gitrepo.Author{Name: "olga", Email: "olga@x.invalid"})
	require.NoError(t, err)
	require.NoError(t, b.repo.UpdateRef(ctx, "refs/heads/main", base, main, "base"))

	pb := &build{t: t, dir: b.dir}
	b.host = identity(t, "--identity", filepath.Join(b.dir, "host.json"), "--name", "host")
	config := filepath.Join(b.dir, "foreman.yaml")
	// The last thing the test does, once every process has stopped: the
	// real foreman verify on the repository, beside the config, with no
	// flag. Every commit on main since the host's first landing was landed
	// by it with a receipt that holds.
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		cmd := exec.Command(bin, "verify", config)
		cmd.Dir, cmd.Env = b.dir, roomtest.CleanEnv()
		out, err := cmd.CombinedOutput()
		if strings.Contains(string(out), "records no landing yet") {
			return
		}
		t.Logf("foreman verify:\n%s", out)
		assert.NoError(t, err, "foreman verify:\n%s", out)
		assert.Contains(t, string(out), "0 not landed by foreman, 0 receipts refused", "foreman verify:\n%s", out)
	})
	write := func(url string, auditor string, rate time.Duration) {
		var c strings.Builder
		fmt.Fprintf(&c, "server:\n  url: %s\n  rate_limit: %s\n", url, rate)
		c.WriteString("build:\n  name: shop\n  components:\n")
		for _, name := range comps {
			fmt.Fprintf(&c, "    - name: %s\n", name)
		}
		c.WriteString("rules:\n  max_build_time: 0\n  ci_gating: on\n  merge: external\n  audit_timeout: 1h\n" + rules)
		fmt.Fprintf(&c, "roles:\n  ci: [%q]\n  merger: [%q]\n", b.host, b.host)
		if auditor != "" {
			fmt.Fprintf(&c, "  auditors: [%q]\n", auditor)
		}
		c.WriteString("host:\n  repo: shop.git\n  identity: host.json\n  overlap_interval: 1s\n" + hostLines)
		if check != "" {
			fmt.Fprintf(&c, "  checks: [%q]\n", check)
		}
		c.WriteString("journal:\n  path: journal\nhttp:\n  listen: \"\"\n")
		require.NoError(t, os.WriteFile(config, []byte(c.String()), 0o644))
	}
	// FOREMANTEST_ROOM_URL runs the build in a room someone else serves (a
	// stock AgentChat server, started with LURK_DISABLED=true and
	// GENESIS_AGENT_ID set to the id of FOREMANTEST_FOREMAN_KEY's key, so
	// that foreman may make #build): its pace is the stock one a second.
	url, rate := os.Getenv("FOREMANTEST_ROOM_URL"), roomtest.Pace
	if key := os.Getenv("FOREMANTEST_FOREMAN_KEY"); key != "" {
		data, err := os.ReadFile(key)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(b.dir, ".foreman"), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(b.dir, ".foreman", "identity.json"), data, 0o600))
	}
	if url == "" {
		write("ws://127.0.0.1:1", "", rate)
		b.foreman = identity(t, config)
		serve := pb.start("serve", "--listen", "127.0.0.1:0", "--buffer-size", "5000", config)
		url = serve.Await(t, `listening on (ws://127\.0\.0\.1:\d+)`)
	} else {
		rate = time.Second
		// foreman makes #build: it joins before anyone else.
		write(url, "", rate)
		b.foreman = identity(t, config)
		run := pb.start("run", "--log-level", "info", "--new-build", config)
		run.Await(t, `("message":"(in the room|joined)[^"]*")`)
	}
	b.url, b.rate = url, rate
	room := roomtest.At(url, rate)
	for _, name := range append([]string{"watch", "aud"}, builders...) {
		b.peers[name] = room.Join(t, name)
	}
	write(url, b.peers["aud"].ID, rate)
	go func() {
		for l := range b.peers["watch"].Lines() {
			b.mu.Lock()
			b.lines = append(b.lines, l)
			b.mu.Unlock()
		}
	}()
	if rate == roomtest.Pace {
		pb.start("run", "--log-level", "warn", config)
		b.await(b.foreman, "TASKS")
	} else {
		b.say("watch", "STATUS") // TASKS was said before the watcher came
		b.await(b.foreman, "STATUS ")
	}
	b.hostLog = pb.start("host", "--log-level", "warn", config).Stderr
	return b
}

// await waits until sender has said a line starting with prefix and
// returns the first.
func (b *hostBuild) await(sender, prefix string) string {
	b.t.Helper()
	deadline := time.Now().Add(patience)
	for time.Now().Before(deadline) {
		if l := b.said(sender, prefix); len(l) > 0 {
			return l[0]
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.t.Fatalf("waited in vain for %q; the room said:\n%s\nforeman host said:\n%s", prefix, b.dump(), b.hostLog)
	return ""
}

func (b *hostBuild) said(sender, prefix string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return roomtest.From(b.lines, sender, prefix)
}

func (b *hostBuild) dump() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	names := map[string]string{b.foreman: "foreman", b.host: "host"}
	for n, p := range b.peers {
		names[p.ID] = n
	}
	return roomtest.Dump(b.lines, names)
}

func (b *hostBuild) say(peer, line string) { b.peers[peer].Say(line) }

// push commits files on top of parent (a commit, or a branch by name) and
// moves branch there, as a builder's forced push would.
func (b *hostBuild) push(branch, parent string, files map[string]string) string {
	b.t.Helper()
	ctx := context.Background()
	if len(parent) != 40 {
		p, err := b.repo.RevParse(ctx, "refs/heads/"+parent)
		require.NoError(b.t, err)
		parent = p
	}
	oid, err := b.repo.CommitFiles(ctx, parent, files, "work on "+branch, gitrepo.Author{Name: "builder", Email: "b@x.invalid"})
	require.NoError(b.t, err)
	b.force(branch, oid)
	return oid
}

func (b *hostBuild) force(branch, oid string) {
	b.t.Helper()
	old, _ := b.repo.RevParse(context.Background(), "refs/heads/"+branch)
	require.NoError(b.t, b.repo.UpdateRef(context.Background(), "refs/heads/"+branch, oid, old, "push"))
}

func (b *hostBuild) tip(ref string) string {
	b.t.Helper()
	oid, err := b.repo.RevParse(context.Background(), ref)
	require.NoError(b.t, err)
	return oid
}

// land takes c from READY to MERGED: the host checks, the auditor passes,
// the host lands.
func (b *hostBuild) land(builder, c, ref string) {
	b.t.Helper()
	before := b.headNow()
	b.say(builder, "READY "+c+" "+ref)
	b.await(b.foreman, "REVIEW "+c+" ")
	b.say("aud", "AUDIT "+c+" PASS")
	b.await(b.foreman, "OK MERGED "+c)
	// The host signs its head after each landing: the test's last step,
	// foreman verify, finds the newest landing anchored only once it has
	// (a host stopped before it signs leaves verify saying so).
	require.Eventually(b.t, func() bool { now := b.headNow(); return now != "" && now != before },
		patience, 20*time.Millisecond, "the host never signed its head after landing %s", c)
}

// headNow is the blob the host's signed head of main is, "" if none.
func (b *hostBuild) headNow() string {
	out, err := b.repo.Git(context.Background(), "rev-parse", "--verify", "--quiet", headRef)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// headRef is where the host keeps its signed head of main.
const headRef = "refs/foreman/head/main"

// Issue 28, with the real binaries and real git: two builders editing the
// same line hear OVERLAP before either says READY; with overlap: wait the
// later one WAITs, is UNBLOCKED when the other lands, and lands after it
// without a CI CONFLICT.
func TestOverlapBeforeReadyAndWait(t *testing.T) {
	b := startHostBuild(t, "  overlap: wait\n  checkin_interval: 1h\n", "", []string{"api", "web"}, "b1", "b2")
	b1, b2 := b.peers["b1"].ID, b.peers["b2"].ID
	b.say("b1", "CLAIM api")
	b.await(b.foreman, "ACK api "+b1)
	b.say("b2", "CLAIM web")
	b.await(b.foreman, "ACK web "+b2)

	b.push("b1/api", "main", map[string]string{"shared.txt": "one\napi's two\nthree\n", "api.txt": "api\n"})
	b.say("b1", "PROGRESS api 40 branch=b1/api")
	b.push("b2/web", "main", map[string]string{"shared.txt": "one\nweb's two\nthree\n", "web.txt": "web\n"})
	b.say("b2", "PROGRESS web 40 branch=b2/web")

	overlap := b.await(b.host, "OVERLAP ")
	assert.Equal(t, "OVERLAP web api shared.txt", overlap, "web moved last")
	assert.Empty(t, b.said(b1, "READY"))
	assert.Empty(t, b.said(b2, "READY"))
	b.await(b.foreman, "WAIT web "+b2+" api")

	b.land("b1", "api", "b1/api")
	b.await(b.foreman, "UNBLOCKED web "+b2)
	// b2 goes on from main as it is now, keeping both edits.
	b.push("b2/web", "main", map[string]string{"shared.txt": "one\napi's two, web's two\nthree\n", "web.txt": "web\n"})
	b.land("b2", "web", "b2/web")
	assert.Empty(t, b.said(b.host, "CI web CONFLICT"), "no conflict found at READY:\n%s", b.dump())
	assert.Len(t, b.said(b.host, "OVERLAP"), 1, "said once")
}

// Issue 28's handoff, with the real binaries and real git: a builder that
// pushed work and went silent times out; the next builder's ACK names its
// branch; the host pins the old tip, which holds after the old builder
// force-pushes an empty branch; the new builder finishes from it.
func TestHandoffAfterATimeout(t *testing.T) {
	b := startHostBuild(t, "  checkin_interval: 2s\n  missed_checkins: 1\n", "", []string{"db"}, "b1", "b2")
	b1, b2 := b.peers["b1"].ID, b.peers["b2"].ID
	b.say("b1", "CLAIM db")
	b.await(b.foreman, "ACK db "+b1)
	half := b.push("b1/db", "main", map[string]string{"db/schema.sql": "create table books;\n"})
	b.say("b1", "PROGRESS db 50 branch=b1/db")
	b.await(b.foreman, "TIMEOUT db "+b1)

	b.say("b2", "CLAIM db")
	ack := b.await(b.foreman, "ACK db "+b2)
	assert.Contains(t, ack, "branch=b1/db after TIMEOUT of "+b1)
	handoff := b.await(b.host, b2+" db: refs/foreman/handoff/db/1 ("+half+")")
	assert.Contains(t, handoff, "keeps the work "+b1+" pushed to b1/db")

	b.force("b1/db", b.tip("refs/heads/main")) // the old builder force-pushes an empty branch
	assert.Equal(t, half, b.tip("refs/foreman/handoff/db/1"), "the pin keeps the work")
	b.push("b2/db", half, map[string]string{"db/migrate.sql": "alter table books;\n"})
	b.say("b2", "PROGRESS db 90 branch=b2/db")
	b.land("b2", "db", "b2/db")
	files, err := b.repo.Git(context.Background(), "ls-tree", "-r", "--name-only", "main")
	require.NoError(t, err)
	assert.Contains(t, files, "db/schema.sql", "b1's work landed, finished by b2")
	assert.Contains(t, files, "db/migrate.sql")
}

// TestOverlapWarnAgainstWait times the overlapping case of issue 28 both
// ways, with the real binaries: api and web edit the same line, every
// check takes OVERLAP_CHECK (default 0.3 s; docs/PERFORMANCE.md's figure
// uses 4s). With warn, both say READY and the later one meets its CI
// CONFLICT at landing, then reworks; with wait, the later one WAITs for
// the other to land and reworks before its READY. It prints how long each
// took from the first READY to COMPLETE; it asserts only what must hold.
func TestOverlapWarnAgainstWait(t *testing.T) {
	check := 300 * time.Millisecond
	if v := os.Getenv("OVERLAP_CHECK"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err)
		check = d
	}
	for _, mode := range []string{"wait", "warn"} {
		took, conflicts := overlapBuild(t, mode, check)
		t.Logf("overlap %s: first READY to COMPLETE %s (checks of %s), %d CI CONFLICT", mode, took.Round(10*time.Millisecond), check, conflicts)
		fmt.Printf("overlapbench: mode=%s check=%s ready_to_complete=%s conflicts=%d\n", mode, check, took.Round(10*time.Millisecond), conflicts)
		if mode == "wait" {
			assert.Zero(t, conflicts)
		} else {
			assert.Equal(t, 1, conflicts)
		}
	}
}

func overlapBuild(t *testing.T, mode string, check time.Duration) (time.Duration, int) {
	rules := "  overlap: " + mode + "\n  checkin_interval: 1h\n"
	b := startHostBuild(t, rules, fmt.Sprintf("sleep %.3f", check.Seconds()), []string{"api", "web"}, "b1", "b2")
	b1, b2 := b.peers["b1"].ID, b.peers["b2"].ID
	b.say("b1", "CLAIM api")
	b.await(b.foreman, "ACK api "+b1)
	b.say("b2", "CLAIM web")
	b.await(b.foreman, "ACK web "+b2)
	b.push("b1/api", "main", map[string]string{"shared.txt": "one\napi's two\nthree\n"})
	b.say("b1", "PROGRESS api 40 branch=b1/api")
	b.push("b2/web", "main", map[string]string{"shared.txt": "one\nweb's two\nthree\n"})
	b.say("b2", "PROGRESS web 40 branch=b2/web")
	b.await(b.host, "OVERLAP ")
	start := time.Now()
	rework := func() {
		b.push("b2/web", "main", map[string]string{"shared.txt": "one\napi's two, web's two\nthree\n"})
	}
	b.say("b1", "READY api b1/api")
	if mode == "wait" {
		b.await(b.foreman, "REVIEW api ")
		b.say("aud", "AUDIT api PASS")
		b.await(b.foreman, "UNBLOCKED web "+b2)
		rework()
		b.say("b2", "READY web b2/web")
		b.await(b.foreman, "REVIEW web ")
		b.say("aud", "AUDIT web PASS")
	} else {
		b.say("b2", "READY web b2/web")
		for _, c := range []string{"api", "web"} {
			b.await(b.foreman, "REVIEW "+c+" ")
			b.say("aud", "AUDIT "+c+" PASS")
		}
		b.await(b.foreman, "FIX web "+b2)
		rework()
		b.say("b2", "READY web b2/web")
		b.awaitN(b.foreman, "REVIEW web ", 2)
		b.say("aud", "AUDIT web PASS")
	}
	b.await(b.foreman, "COMPLETE ")
	return time.Since(start), len(b.said(b.host, "CI web CONFLICT"))
}

// awaitN waits until sender has said n lines starting with prefix.
func (b *hostBuild) awaitN(sender, prefix string, n int) {
	b.t.Helper()
	deadline := time.Now().Add(patience)
	for len(b.said(sender, prefix)) < n {
		if time.Now().After(deadline) {
			b.t.Fatalf("waited in vain for %d of %q; the room said:\n%s", n, prefix, b.dump())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

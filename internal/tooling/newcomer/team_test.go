package newcomer

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/agents"
	"github.com/agentforeman/foreman/internal/host/sandbox"
	"github.com/agentforeman/foreman/internal/web"
)

// letAgentsIn lets other users enter the project's directories, from its
// .foreman up to the temporary directory: foreman up, run as root with
// host.sandbox on, runs each agent as a uid of its own, which must pass
// them to reach its workspace (t.TempDir makes them 0700, and up refuses
// them, naming the remedy: chmod o+x).
func letAgentsIn(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return // a user namespace: the agents are this user
	}
	for d := filepath.Join(dir, ".foreman"); d != "/" && d != filepath.Clean(os.TempDir()); d = filepath.Dir(d) {
		require.NoError(t, os.Chmod(d, 0o711))
	}
}

// board reads foreman up's board, as foreman status does.
func board(t *testing.T, url string) web.Board {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"api/view", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var b web.Board
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&b))
	return b
}

// boardUntil reads the board until ok holds of it.
func boardUntil(t *testing.T, up *proc, url, what string, ok func(web.Board) bool) web.Board {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		b := board(t, url)
		if ok(b) {
			return b
		}
		select {
		case <-up.done:
			t.Fatalf("foreman up ended before %s\n%s", what, up.stderr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("never %s\n%s", what, up.stderr)
		}
	}
}

// foreman init && foreman up --agents 3, on a fresh repository, with no
// other process started by hand: up starts three scripted builders and an
// auditor, each in its own workspace, and the build reaches COMPLETE with
// main holding every component. A builder killed (SIGKILL) while it owns a
// component, its work in progress pushed, is started again in the same
// workspace with the same key, takes its component back, and lands it.
// At COMPLETE every agent is stopped; Ctrl-C stops up, the agents first.
func TestUpRunsTheTeam(t *testing.T) {
	if testing.Short() {
		t.Skip("builds foreman and runs a whole build on real git with four agents")
	}
	// The README's quickest path is this command.
	blocks := readmeSection(t, "README.md", "## The quickest path", "## Running it for real")
	require.Len(t, blocks, 1)
	require.Equal(t, []string{
		"git clone https://github.com/agentforeman/foreman && cd foreman && make install && cd ..",
		"git init --initial-branch=main shop && cd shop && git commit --allow-empty -m start",
		"foreman init --name olga && foreman up --agents 3",
	}, blocks[0].lines)
	u := newUser(t)
	installed(t, u)
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "olga", "GIT_AUTHOR_EMAIL": "olga@example.com",
		"GIT_COMMITTER_NAME": "olga", "GIT_COMMITTER_EMAIL": "olga@example.com"} {
		u.setenv(k, v)
	}
	u.run(u.dir, "git init --initial-branch=main shop")
	dir := u.dir + "/shop"
	u.run(dir, "git commit --allow-empty -m start")
	u.run(dir, initStep)
	letAgentsIn(t, dir)
	up := u.start(dir, "foreman up --agents 3 --listen 127.0.0.1:0 --http 127.0.0.1:0")
	ready := up.await(t, up.stdout, 1, `(?s)^(foreman up: .*Ctrl-C stops it all\.\n)`)[1]
	assert.Regexp(t, `(?m)^  agents   b1 \(builder\), b2 \(builder\), b3 \(builder\), aud \(auditor\), started now, each in its workspace under `+
		regexp.QuoteMeta(dir+"/.foreman/agents")+` `, ready)
	if _, _, err := sandbox.Landlock(); err == nil {
		assert.Contains(t, ready, "           confined (host.sandbox): ", "host.sandbox is on by default: up confines its agents")
	}
	url := regexp.MustCompile(`(?m)^  board    (http://127\.0\.0\.1:\d+/)$`).FindStringSubmatch(ready)
	require.NotNil(t, url, ready)

	// A builder that owns a component and has pushed work in progress.
	agentOf := func(b web.Board, id string) *agents.Status {
		for i, a := range b.Agents {
			if a.ID == id {
				return &b.Agents[i]
			}
		}
		return nil
	}
	var victim agents.Status
	var comp string
	boardUntil(t, up, url[1], "a builder owned a component with its work in progress pushed", func(b web.Board) bool {
		if b.View == nil {
			return false
		}
		for _, c := range b.View.Components {
			if a := agentOf(b, c.Owner); a != nil && c.State == "building" && c.Branch != "" && a.State == agents.Running && a.Pid != 0 {
				victim, comp = *a, c.Name
				return true
			}
		}
		return false
	})
	t.Logf("killing %s (pid %d), which owns %s", victim.Name, victim.Pid, comp)
	require.NoError(t, syscall.Kill(victim.Pid, syscall.SIGKILL))
	boardUntil(t, up, url[1], victim.Name+" was started again", func(b web.Board) bool {
		a := agentOf(b, victim.ID)
		return a != nil && a.Restarts == 1 && a.State == agents.Running && a.Pid != victim.Pid && a.LastExit == "signal: killed"
	})

	up.await(t, up.stderr, 1, `COMPLETE bookshop`)
	git := exec.Command("git", "log", "--first-parent", "--format=%s", "main")
	git.Dir = dir
	subjects, err := git.Output()
	require.NoError(t, err)
	// Its branch is in its namespace (its id, without @): it pushed
	// through up's push gate, with the token only its own branches take.
	assert.Contains(t, string(subjects), "Merge "+strings.TrimPrefix(victim.ID, "@")+"/"+comp+" ("+comp+")", "the killed builder took %s back and landed it:\n%s", comp, subjects)
	git = exec.Command("git", "ls-tree", "-r", "--name-only", "main")
	git.Dir = dir
	files, err := git.Output()
	require.NoError(t, err)
	for _, c := range []string{"db", "auth", "catalog", "cart", "payments", "mailer", "web"} {
		assert.Contains(t, strings.Fields(string(files)), c+"/"+c+".txt", "main holds %s", c)
	}
	final := boardUntil(t, up, url[1], "every agent stopped at COMPLETE", func(b web.Board) bool {
		for _, a := range b.Agents {
			if a.State != agents.Stopped {
				return false
			}
		}
		return len(b.Agents) == 4
	})
	for _, a := range final.Agents {
		assert.Equal(t, "the build is COMPLETE", a.Reason, a.Name)
	}
	up.stop(t)
	assert.Equal(t, 0, up.cmd.ProcessState.ExitCode(), up.stderr.String())
	logs := up.stderr.String()
	team, host := strings.Index(logs, "the agents have stopped"), strings.Index(logs, "the host has stopped")
	assert.True(t, team >= 0 && team < host, "the agents stop first:\n%s", logs)
}

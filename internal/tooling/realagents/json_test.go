package realagents

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// event is `foreman agent --json`'s line as docs/AGENTS.md documents it;
// the builder below knows nothing else of foreman.
type event struct {
	Type        string    `json:"type"`
	ID          string    `json:"id"`
	TS          time.Time `json:"ts"`
	From        string    `json:"from"`
	Coordinator bool      `json:"coordinator"`
	Self        bool      `json:"self"`
	Text        string    `json:"text"`
	Reply       *struct {
		Verb       string   `json:"verb"`
		Component  string   `json:"component"`
		Agent      string   `json:"agent"`
		Components []string `json:"components"`
		PR         string   `json:"pr"`
	} `json:"reply"`
}

// A builder written against `foreman agent --json` alone completes a
// component: it reads JSON lines, and writes protocol lines.
func TestJSONBuilderCompletesAComponent(t *testing.T) {
	b, auditor := startBuild(t, "  checkin_interval: 30s\n", "30m", "db")
	key := filepath.Join(b.dir, "cy.json")
	cmd := exec.Command(bin, "agent", "--json", "--identity", key, "--new", "--name", "cy", b.config)
	stderr := &roomtest.SyncBuffer{}
	cmd.Dir, cmd.Env, cmd.Stderr = b.dir, roomtest.CleanEnv(), stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	lines := make(chan string, 1000)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	reviewed := make(chan string, 1)
	go func() { // the auditor, by hand
		l, _ := auditor.AwaitMatch(b.foreman, "REVIEW db ", func(string) bool { return true })
		reviewed <- l
		auditor.Say("AUDIT db PASS")
	}()

	say := func(l ...string) {
		_, err := io.WriteString(stdin, strings.Join(l, "\n")+"\n")
		require.NoError(t, err)
	}
	var me string
	var said []string
	mine := false
	deadline := time.After(patience)
	for done := false; !done; {
		var raw string
		select {
		case l, ok := <-lines:
			require.True(t, ok, "stdout closed early; stderr: %s", stderr.String())
			raw = l
		case <-deadline:
			t.Fatalf("db was never merged; said %q; stderr: %s", said, stderr.String())
		}
		var e event
		require.NoError(t, json.Unmarshal([]byte(raw), &e), "every stdout line is a JSON object: %s", raw)
		require.NotEmpty(t, e.Type, raw)
		switch {
		case e.Type == "hello":
			me = e.ID
		case e.Type == "line" && e.Self:
			said = append(said, e.Text)
			assert.False(t, e.TS.IsZero(), "own lines carry the room's time: %s", raw)
		case e.Type != "line" || !e.Coordinator || e.Reply == nil:
		case e.Reply.Verb == "TASKS" && !mine && slices.Contains(e.Reply.Components, "db"):
			say("CLAIM db")
		case e.Reply.Verb == "ACK" && e.Reply.Component == "db" && e.Reply.Agent == me:
			mine = true
			say("PROGRESS db 50 halfway", "READY db cy/db")
		case e.Reply.Verb == "MERGED" && e.Reply.Component == "db":
			done = true
		}
	}
	assert.Equal(t, fmt.Sprintf("REVIEW db %s cy/db", me), <-reviewed)
	assert.Equal(t, []string{"CLAIM db", "PROGRESS db 50 halfway", "READY db cy/db"}, said)
	require.NoError(t, stdin.Close())
	select {
	case <-exited:
		assert.NoError(t, exitErr, "leaves cleanly at the end of stdin; stderr: %s", stderr.String())
	case <-time.After(patience):
		t.Fatal("did not leave at the end of stdin")
	}
	for l := range lines {
		assert.True(t, json.Valid([]byte(l)), "only JSON on stdout: %s", l)
	}
	assert.Contains(t, stderr.String(), "cy: agent id "+me)
}

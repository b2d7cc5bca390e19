package chaos

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/tooling/demo"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// bookshop is the build the fault tests run.
var bookshop = demo.Bookshop()

// botProcess is foreman run as a child process, with its own identity and
// journal, against a test room.
type botProcess struct {
	t      *testing.T
	dir    string
	config string
	id     string
	rules  string
	comps  []coordinator.Component
	write  func()
	cmd    *exec.Cmd
	starts int
}

func newBotProcess(t *testing.T, room *roomtest.Room, auditors []string, extra string) *botProcess {
	t.Helper()
	dir := t.TempDir()
	ident, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	require.NoError(t, ident.Save(filepath.Join(dir, "identity.json")))
	const cfg = `server:
  url: %s
  identity: %s
  rate_limit: %s
build:
  name: bookshop
  components:
%sroles:
  auditors: [%s]
rules:
  %s
  max_build_time: 0
journal:
  path: %s
http:
  listen: ""
log:
  format: json
  level: debug
%s`
	b := &botProcess{t: t, dir: dir, config: filepath.Join(dir, "foreman.yaml"), id: ident.AgentID(),
		rules: "checkin_interval: 2s", comps: bookshop}
	b.write = func() {
		var comps strings.Builder
		for _, c := range b.comps {
			fmt.Fprintf(&comps, "    - name: %s\n", c.Name)
			if len(c.Deps) > 0 {
				fmt.Fprintf(&comps, "      depends_on: [%s]\n", strings.Join(c.Deps, ", "))
			}
		}
		text := fmt.Sprintf(cfg, room.URL(), filepath.Join(dir, "identity.json"), room.Rate(), comps.String(),
			quoted(auditors), b.rules, filepath.Join(dir, "journal"), extra)
		require.NoError(t, os.WriteFile(b.config, []byte(text), 0o600))
	}
	b.write()
	return b
}

// setComponents replaces the build.
func (b *botProcess) setComponents(comps []coordinator.Component) {
	b.comps = comps
	b.write()
}

// setRules replaces the rules section's lines (YAML, indented by two).
func (b *botProcess) setRules(rules string) {
	b.rules = rules
	b.write()
}

// start runs the bot; its log goes to a file per start.
func (b *botProcess) start() {
	b.t.Helper()
	b.starts++
	log, err := os.Create(filepath.Join(b.dir, fmt.Sprintf("run%02d.log", b.starts)))
	require.NoError(b.t, err)
	b.cmd = exec.Command(foremanBin, "run", b.config)
	b.cmd.Stdout, b.cmd.Stderr = log, log
	require.NoError(b.t, b.cmd.Start())
	b.t.Cleanup(func() { b.kill(); log.Close() })
}

// kill stops the bot with SIGKILL: no cleanup of any kind.
func (b *botProcess) kill() {
	if b.cmd != nil && b.cmd.ProcessState == nil {
		_ = b.cmd.Process.Kill()
		_ = b.cmd.Wait()
	}
}

// stop stops the bot with SIGTERM and returns its exit error. It waits
// for the bot to be in the room first: a signal that comes before the bot
// has set up its handlers would just kill it.
func (b *botProcess) stop() error {
	if b.cmd == nil || b.cmd.ProcessState != nil {
		return nil
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		data, _ := os.ReadFile(filepath.Join(b.dir, fmt.Sprintf("run%02d.log", b.starts)))
		if strings.Contains(string(data), "joined the channel") {
			break
		}
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- b.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		b.kill()
		return fmt.Errorf("foreman did not stop on SIGTERM")
	}
}

// saidPerLife counts, for each start of the bot, the replies it logged.
func (b *botProcess) saidPerLife() []int {
	out := make([]int, b.starts)
	for i := 1; i <= b.starts; i++ {
		data, _ := os.ReadFile(filepath.Join(b.dir, fmt.Sprintf("run%02d.log", i)))
		out[i-1] = strings.Count(string(data), `"said":`)
	}
	return out
}

// logs returns the bot's logs, for a failure message.
func (b *botProcess) logs() string {
	var out strings.Builder
	for i := 1; i <= b.starts; i++ {
		data, _ := os.ReadFile(filepath.Join(b.dir, fmt.Sprintf("run%02d.log", i)))
		fmt.Fprintf(&out, "--- run %d\n%s", i, tail(string(data), 30))
	}
	return out.String()
}

// quoted lists sender ids for YAML, where a plain @ cannot start a value.
func quoted(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = fmt.Sprintf("%q", id)
	}
	return strings.Join(q, ", ")
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}

// observer records everything the coordinator says.
type observer struct {
	mu    sync.Mutex
	lines []string
	twice []string // lines said again in a message not stamped "may repeat"
	count map[string]int
	again int           // lines in messages stamped "may repeat"
	seen  chan struct{} // pinged on every line
}

func observe(p *roomtest.Peer, bot string) *observer {
	o := &observer{seen: make(chan struct{}, 1), count: map[string]int{}}
	go func() {
		for l := range p.Lines() {
			if l.From != bot {
				continue
			}
			o.mu.Lock()
			o.lines = append(o.lines, l.Text)
			o.count[l.Text]++
			if o.count[l.Text] > 1 && !l.Again && !strings.HasPrefix(l.Text, "TASKS") {
				o.twice = append(o.twice, l.Text)
			}
			if l.Again {
				o.again++
			}
			o.mu.Unlock()
			select {
			case o.seen <- struct{}{}:
			default:
			}
		}
	}()
	return o
}

// saidTwice is every line the room heard again without the stamp that
// warns it may repeat (TASKS, a list of what is claimable, may repeat).
func (o *observer) saidTwice() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.twice...)
}

// marked counts the lines sent again with the "may repeat" stamp.
func (o *observer) marked() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.again
}

func (o *observer) said() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.lines...)
}

// waitFor waits until the coordinator has said a line starting with prefix.
func (o *observer) waitFor(prefix string, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		for _, l := range o.said() {
			if strings.HasPrefix(l, prefix) {
				return true
			}
		}
		select {
		case <-o.seen:
		case <-deadline:
			return false
		}
	}
}

// think is how long a simulated agent takes to answer: long enough that a
// build spans several of the bot's lives in the kill tests.
func think() { time.Sleep(time.Duration(40+rand.IntN(160)) * time.Millisecond) }

// builder claims comp when TASKS offers it and, once it has the ACK,
// reports progress and READY. It says each line once: anything the bot
// missed while down, it must catch up on from the room's history.
func builder(p *roomtest.Peer, bot, comp string) {
	go func() {
		claimed, working := false, false
		for l := range p.Lines() {
			if l.From != bot {
				continue
			}
			f := strings.Fields(l.Text)
			switch {
			case f[0] == "TASKS" && !claimed && contains(f[1:], comp):
				claimed = true
				think()
				p.Say("CLAIM " + comp)
			case f[0] == "ACK" && len(f) > 2 && f[1] == comp && f[2] == p.ID && !working:
				working = true
				think()
				p.Say("PROGRESS " + comp + " 50")
				think()
				p.Say("READY " + comp + " " + prOf(comp))
			}
		}
	}()
}

// prOf is the branch a builder names in READY. The one for payments looks
// like an API key, so the room (as a stock server does) rewrites foreman's
// REVIEW line: foreman must know its own messages by their stamps.
func prOf(comp string) string {
	if comp == "payments" {
		return "sk-payments0123456789abcdefgh"
	}
	return "pr/" + comp
}

// auditor passes every review.
func auditor(p *roomtest.Peer, bot string) {
	go func() {
		for l := range p.Lines() {
			if f := strings.Fields(l.Text); l.From == bot && f[0] == "REVIEW" {
				think()
				p.Say("AUDIT " + f[1] + " PASS")
			}
		}
	}()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentforeman/foreman/agentchat"
)

// botProc is foreman run as a child process: apart from the agents, so that
// its CPU time and memory are its own.
type botProc struct {
	dir     string
	logPath string
	cmd     *exec.Cmd
	log     *os.File
	board   string // http://127.0.0.1:PORT, where /metrics is
	exited  chan struct{}
	waitErr error
}

type botSpec struct {
	id         *agentchat.Identity
	binary     string
	dir        string
	url        string
	channel    string
	rateLimit  time.Duration // 0: the room has none
	floodLimit int           // -1: the room has none
	components []string
	journal    bool
}

// writeBotConfig writes the bot's identity and configuration into dir.
// The identity is made by the caller, not by the bot, so that the agents
// know the bot's sender id before it speaks.
func writeBotConfig(s botSpec) (config string, err error) {
	identity := filepath.Join(s.dir, "identity.json")
	if err := s.id.Save(identity); err != nil {
		return "", err
	}
	journal := ""
	if s.journal {
		journal = filepath.Join(s.dir, "journal")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "server:\n  url: %q\n  channel: %q\n  identity: %q\n  name: foreman\n  rate_limit: %s\n  flood_limit: %d\n",
		s.url, s.channel, identity, s.rateLimit, s.floodLimit)
	b.WriteString("build:\n  name: bench\n  components:\n")
	for _, c := range s.components {
		fmt.Fprintf(&b, "    - name: %s\n", c)
	}
	// One claim per agent, as the scenario expects; no overtime escalation
	// in a long run.
	b.WriteString("rules:\n  max_claims_per_agent: 1\n  max_build_time: 0\n")
	fmt.Fprintf(&b, "journal:\n  path: %q\nrecord:\n  path: \"\"\n", journal)
	// Port 0: the bot picks a free port and logs its URL, which avoids the
	// race of choosing one here and handing it over.
	b.WriteString("http:\n  listen: 127.0.0.1:0\nlog:\n  level: info\n  format: json\n")
	config = filepath.Join(s.dir, "foreman.yaml")
	return config, os.WriteFile(config, []byte(b.String()), 0o600)
}

// startBot starts `foreman run` and waits until it serves /metrics.
func startBot(ctx context.Context, s botSpec) (*botProc, error) {
	config, err := writeBotConfig(s)
	if err != nil {
		return nil, fmt.Errorf("writing the bot's config: %w", err)
	}
	p := &botProc{dir: s.dir, logPath: filepath.Join(s.dir, "foreman.log"), exited: make(chan struct{})}
	p.log, err = os.Create(p.logPath)
	if err != nil {
		return nil, err
	}
	// Each run is a new build, even in a room with an earlier run's.
	p.cmd = exec.Command(s.binary, "run", "--new-build", config)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.Env = childEnv()
	if err := p.cmd.Start(); err != nil {
		p.log.Close()
		return nil, fmt.Errorf("starting %s: %w", s.binary, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		if url := boardURL(p.logPath); url != "" {
			p.board = url
			return p, nil
		}
		select {
		case <-tick.C:
		case <-p.exited:
			p.log.Close()
			return nil, fmt.Errorf("foreman run exited at start (%v); its log:\n%s", p.waitErr, p.tail(20))
		case <-deadline:
			p.stop()
			return nil, fmt.Errorf("foreman run did not serve its board within 30s; its log:\n%s", p.tail(20))
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		}
	}
}

// childEnv is this process's environment without FOREMAN_* variables,
// which would override the generated config.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FOREMAN_") {
			env = append(env, kv)
		}
	}
	return env
}

// boardURL finds, in the bot's JSON log, the URL it serves its board on.
func boardURL(logPath string) string {
	data, err := os.ReadFile(logPath)
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte(`"url":"http`)) {
			continue
		}
		var rec struct {
			URL string `json:"url"`
		}
		if json.Unmarshal(line, &rec) == nil && strings.HasPrefix(rec.URL, "http://") {
			return rec.URL
		}
	}
	return ""
}

func (p *botProc) pid() int { return p.cmd.Process.Pid }

// stop ends the bot with SIGTERM, as an operator would, and kills it if it
// does not stop in time. It returns the bot's exit error, if any.
func (p *botProc) stop() error {
	defer p.log.Close()
	select {
	case <-p.exited:
		return p.waitErr
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		_ = p.cmd.Process.Kill()
	}
	select {
	case <-p.exited:
		return p.waitErr
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return errors.New("foreman run did not stop within 15s of SIGTERM; killed")
	}
}

// tail is the end of the bot's log, for an error message.
func (p *botProc) tail(n int) string {
	data, _ := os.ReadFile(p.logPath)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

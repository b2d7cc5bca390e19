package newcomer

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repo is the repository's root, from this package's directory.
const repo = "../../.."

// patience bounds every wait: generous, since the machine may be busy
// (two cores, the race detector on in the other packages); a wait ends as
// soon as what it waits for is printed. Nothing here measures speed.
const patience = 2 * time.Minute

// buildPatience bounds make install, which may compile foreman and its
// dependencies from nothing.
const buildPatience = 10 * time.Minute

// The README's lines this test types, word for word.
const (
	demoStep    = `make demo ARGS="--minute 50ms"`
	installStep = "make install"
	initStep    = "foreman init --name olga"
	serveStep   = "foreman serve --listen 127.0.0.1:0"
	runStep     = "foreman run --http 127.0.0.1:0"
	chatStep    = "foreman agent --role chat --identity .foreman/olga.json"
	builderStep = "foreman agent --role builder --name b1 --minute 1s --abort-on 'db=missing_dependency: no schema migration tool installed'"
	resolveLine = "RESOLVE db the tool is installed now"
	builder2    = "foreman agent --role builder --name b2 --minute 1s"
)

// output is a process's stdout or stderr, read while it runs.
type output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// user is a newcomer at a shell: a directory, an environment without any
// FOREMAN_* setting of the test's own, and a PATH.
type user struct {
	t   *testing.T
	dir string
	env []string
}

func newUser(t *testing.T) *user {
	u := &user{t: t, dir: t.TempDir()}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FOREMAN_") && !strings.HasPrefix(kv, "GOBIN=") {
			u.env = append(u.env, kv)
		}
	}
	return u
}

func (u *user) setenv(key, value string) {
	for i, kv := range u.env {
		if strings.HasPrefix(kv, key+"=") {
			u.env = append(u.env[:i], u.env[i+1:]...)
			break
		}
	}
	u.env = append(u.env, key+"="+value)
}

func (u *user) getenv(key string) string {
	for _, kv := range u.env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

// proc is one command the user started.
type proc struct {
	name           string
	cmd            *exec.Cmd
	stdin          io.WriteCloser
	stdout, stderr *output
	done           chan struct{}
}

// start runs a shell line, split into words as sh would for these lines
// (single quotes group words), in the user's directory. "foreman" is
// looked up on the user's PATH, as the shell would.
func (u *user) start(in string, line string) *proc {
	t := u.t
	t.Helper()
	args := words(line)
	bin := args[0]
	if !strings.Contains(bin, "/") {
		bin = u.lookPath(bin)
	}
	p := &proc{name: line, stdout: &output{}, stderr: &output{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args[1:]...)
	p.cmd.Dir, p.cmd.Env = in, u.env
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	var err error
	p.stdin, err = p.cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start(), p.name)
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.stop(t) })
	return p
}

// lookPath finds a program on the user's PATH, not the test's.
func (u *user) lookPath(name string) string {
	for _, d := range filepath.SplitList(u.getenv("PATH")) {
		if d == "" {
			continue
		}
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	u.t.Fatalf("%s is not on PATH", name)
	return ""
}

// words splits a shell line of the README: spaces separate words, quotes
// keep them together.
func words(line string) []string {
	var out []string
	var w strings.Builder
	var quote rune // the open quote, or 0
	inWord := false
	for _, r := range line {
		switch {
		case quote == 0 && (r == '\'' || r == '"'):
			quote, inWord = r, true
		case r == quote:
			quote = 0
		case r == ' ' && quote == 0:
			if inWord {
				out = append(out, w.String())
				w.Reset()
			}
			inWord = false
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, w.String())
	}
	return out
}

// run runs a line to its end and returns its stdout and stderr.
func (u *user) run(in string, line string) (string, string) {
	return u.runWithin(patience, in, line)
}

func (u *user) runWithin(limit time.Duration, in string, line string) (string, string) {
	t := u.t
	t.Helper()
	p := u.start(in, line)
	p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(limit):
		t.Fatalf("%s did not finish", p.name)
	}
	require.Equal(t, 0, p.cmd.ProcessState.ExitCode(), "%s\n%s\n%s", p.name, p.stdout, p.stderr)
	return p.stdout.String(), p.stderr.String()
}

// stop interrupts the process as Ctrl-C would, and kills it if it does not
// end in time.
func (p *proc) stop(t *testing.T) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(patience):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("%s did not stop on SIGINT", p.name)
	}
}

// await waits until out holds n matches of re, and returns the last.
func (p *proc) await(t *testing.T, out *output, n int, re string) []string {
	t.Helper()
	pattern := regexp.MustCompile(re)
	deadline := time.Now().Add(patience)
	for {
		if m := pattern.FindAllStringSubmatch(out.String(), -1); len(m) >= n {
			return m[n-1]
		}
		select {
		case <-p.done:
			if m := pattern.FindAllStringSubmatch(out.String(), -1); len(m) >= n {
				return m[n-1]
			}
			t.Fatalf("%s ended (%s) before printing %q\nstdout:\n%s\nstderr:\n%s", p.name, p.cmd.ProcessState, re, p.stdout, p.stderr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never printed %q\nstdout:\n%s\nstderr:\n%s", p.name, re, p.stdout, p.stderr)
		}
	}
}

// type_ sends a line to the process's stdin, as typed at its terminal.
func (p *proc) type_(t *testing.T, line string) {
	t.Helper()
	_, err := io.WriteString(p.stdin, line+"\n")
	require.NoError(t, err, p.name)
}

func (p *proc) exited(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(patience):
		t.Fatalf("%s did not end", p.name)
	}
	return p.cmd.ProcessState.ExitCode()
}

// The README's path goes on in docs/RUNNING.md (the parts one by one).
func TestTheReadmeSaysEveryStep(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repo, "README.md"))
	require.NoError(t, err)
	running, err := os.ReadFile(filepath.Join(repo, "docs", "RUNNING.md"))
	require.NoError(t, err)
	readme = append(append(readme, '\n'), running...)
	// Markdown wraps prose: words, not line breaks, are what it says.
	text := strings.Join(strings.Fields(string(readme)), " ")
	for _, step := range []string{demoStep, installStep, initStep, serveStep, runStep, chatStep, builderStep,
		"\n" + resolveLine + "\n", builder2, "export FOREMAN_SERVER_URL=ws://127.0.0.1:PORT", "listening on ws://127.0.0.1:PORT", "/quit"} {
		if strings.HasPrefix(step, "\n") {
			assert.True(t, strings.Contains(string(readme), step), "the README or docs/RUNNING.md has %q as a line of its own", strings.TrimSpace(step))
		} else {
			assert.True(t, strings.Contains(text, step), "the README or docs/RUNNING.md shows %q, a step the newcomer test takes", step)
		}
	}
}

// TestFromNothingToAnOperatorResolvingAnEscalation walks the README: the
// demo, install foreman, init a directory, start the room and foreman, join as the
// operator, watch a builder give up a component, and settle it.
func TestFromNothingToAnOperatorResolvingAnEscalation(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and installs foreman, and runs a build across four processes")
	}
	u := newUser(t)

	// The first command: the whole story in one process.
	demo := demoStep
	if _, err := exec.LookPath("make"); err != nil {
		demo = "go run ./cmd/foreman demo --minute 50ms" // what the target runs
	}
	out, _ := u.runWithin(buildPatience, repo, demo)
	assert.Regexp(t, `bookshop complete: 7 components merged`, out)

	// make install, into a directory of the test's: it says where, and
	// that the directory is not on PATH, which the user then fixes.
	bin := filepath.Join(t.TempDir(), "bin")
	u.setenv("GOBIN", bin)
	installer := installStep
	if _, err := exec.LookPath("make"); err != nil {
		installer = "go install ./cmd/foreman" // the README's alternative
	}
	out, _ = u.runWithin(buildPatience, repo, installer)
	if installer == installStep {
		assert.Contains(t, out, "installed "+filepath.Join(bin, "foreman")+"\n")
		assert.Contains(t, out, bin+" is not on PATH: export PATH=\""+bin+":$PATH\"")
	}
	u.setenv("PATH", bin+string(filepath.ListSeparator)+u.getenv("PATH"))

	out, _ = u.run(u.dir, initStep)
	assert.Contains(t, out, "\n  "+chatStep+"\n", "init prints how to speak as the operator")
	out, errOut := u.run(u.dir, "foreman validate")
	assert.NotContains(t, out+errOut, "warning:", "init made the user the operator, keys private")

	// The room, on a free port, which the others learn from the variable.
	serve := u.start(u.dir, serveStep)
	url := serve.await(t, serve.stderr, 1, `listening on (ws://127\.0\.0\.1:\d+)`)[1]
	u.setenv("FOREMAN_SERVER_URL", url)

	run := u.start(u.dir, runStep)
	operator := u.start(u.dir, chatStep)
	operator.await(t, operator.stderr, 1, `/help lists them`)
	operator.await(t, operator.stderr, 1, `olga: in #build\n`)
	operator.await(t, operator.stdout, 1, `foreman +coordinator TASKS db\n`)

	builder := u.start(u.dir, builderStep)
	builder.await(t, builder.stderr, 1, `b1: in #build\n`)
	operator.await(t, operator.stdout, 1, `b1 +CLAIM db\n`)
	operator.await(t, operator.stdout, 1, `foreman +coordinator ACK db @[0-9a-f]+ \(b1\)\n`)
	operator.await(t, operator.stdout, 1, `b1 +ABORT db missing_dependency: no schema migration tool installed\n`)
	operator.await(t, operator.stdout, 1, `foreman +coordinator ESCALATE db hard-blocker missing_dependency: no schema migration tool installed .*RESOLVE db`)

	operator.type_(t, resolveLine)
	operator.await(t, operator.stdout, 1, `olga +operator +`+resolveLine+`\n`)
	operator.await(t, operator.stdout, 1, `foreman +coordinator OK `+resolveLine+`\n`)
	// db is offered again; b1 gave it up for good, and a new builder takes it.
	operator.await(t, operator.stdout, 2, `foreman +coordinator TASKS db\n`)
	builder2 := u.start(u.dir, builder2)
	operator.await(t, operator.stdout, 1, `b2 +CLAIM db\n`)
	operator.await(t, operator.stdout, 1, `foreman +coordinator ACK db @[0-9a-f]+ \(b2\) (branch=b1/db )?after ABORT by @[0-9a-f]+ \(b1\) .*: progress 25%\n`)
	operator.await(t, operator.stdout, 1, `b2 +PROGRESS db \d+ picking up from 25%\n`)

	// Leaving: /quit, then Ctrl-C for the rest, as a user would.
	operator.type_(t, "/quit")
	assert.Equal(t, 0, operator.exited(t), operator.stderr.String())
	for _, p := range []*proc{builder2, builder, run, serve} {
		p.stop(t)
		assert.Equal(t, 0, p.cmd.ProcessState.ExitCode(), "%s\n%s", p.name, p.stderr)
	}
	assert.NotContains(t, run.stderr.String(), "no operator", "init made the user the operator")
	assert.Contains(t, run.stderr.String(), `"said":"OK `+resolveLine+`"`, "foreman logs what it carried out")
}

func TestWords(t *testing.T) {
	assert.Equal(t, []string{"make", "demo", "ARGS=--minute 50ms"}, words(`make demo ARGS="--minute 50ms"`))
	assert.Equal(t, []string{"a", "--abort-on", "db=x: y z", ""}, words(`a  --abort-on 'db=x: y z' ''`))
}

package checks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The test binary doubles as the checks: with HELPER set it acts out one
// of the cases below instead of testing.
func TestMain(m *testing.M) {
	if mode := os.Getenv("HELPER"); mode != "" {
		os.Exit(helper(mode))
	}
	os.Exit(m.Run())
}

func helper(mode string) int {
	switch mode {
	case "pass":
		fmt.Println("ok  all good")
		return 0
	case "fail":
		fmt.Println("=== RUN TestLogin")
		fmt.Fprintln(os.Stderr, "\x1b[31m--- FAIL: TestLogin (0.01s)\x1b[0m")
		fmt.Println("    login_test.go:12: want 200, got 500")
		fmt.Println("FAIL example.com/shop/auth")
		return 1
	case "quiet":
		return 3
	case "lint":
		fmt.Println("checking 3 files")
		fmt.Println("shelf/books.txt:2: trailing whitespace.")
		fmt.Println("+all books ")
		return 2
	case "hang", "background":
		// A grandchild in the same group, which must die with it.
		child, err := os.StartProcess(os.Args[0], []string{os.Args[0]}, &os.ProcAttr{Env: []string{"HELPER=sleep"}})
		if err != nil {
			return 9
		}
		_ = os.WriteFile(os.Getenv("PIDFILE"), []byte(strconv.Itoa(child.Pid)), 0o644)
		if mode == "background" {
			return 0
		}
		time.Sleep(time.Hour)
	case "sleep":
		time.Sleep(time.Hour)
	case "flood":
		line := []byte(strings.Repeat("x", 1023) + "\n")
		for range 16 << 10 { // 16 MiB
			if _, err := os.Stdout.Write(line); err != nil {
				return 1
			}
		}
		fmt.Println("FAIL at the very end")
		return 1
	case "secret":
		secret := os.Getenv("SECRET")
		fmt.Print("the token is " + secret[:5])
		_ = os.Stdout.Sync()
		fmt.Println(secret[5:])
		fmt.Println("FAIL: could not log in with " + secret)
		return 1
	case "env":
		for _, kv := range os.Environ() {
			fmt.Println(kv)
		}
		wd, _ := os.Getwd()
		fmt.Println("WD=" + wd)
		return 0
	}
	return 2
}

func spec(t *testing.T, modes ...string) Spec {
	t.Helper()
	dir := t.TempDir()
	s := Spec{Dir: dir, Log: filepath.Join(dir, "check.log"), Timeout: time.Minute}
	for _, m := range modes {
		s.Commands = append(s.Commands, []string{os.Args[0], "-test.run=^$", m})
	}
	return s
}

// helperEnv runs the helper in mode m (all commands of a spec share it, so
// specs that mix modes use one command each with its own Env below).
func withMode(s Spec, mode string, extra ...string) Spec {
	s.Env = Env(s.Dir, append([]string{"HELPER=" + mode}, extra...), nil)
	return s
}

func readLog(t *testing.T, s Spec) string {
	t.Helper()
	data, err := os.ReadFile(s.Log)
	require.NoError(t, err)
	return string(data)
}

func TestPassAndFail(t *testing.T) {
	s := withMode(spec(t, "pass"), "pass")
	res, err := Run(context.Background(), s)
	require.NoError(t, err)
	assert.True(t, res.Passed)
	assert.Contains(t, readLog(t, s), "ok  all good")

	s = withMode(spec(t, "x"), "fail")
	res, err = Run(context.Background(), s)
	require.NoError(t, err)
	assert.False(t, res.Passed)
	assert.Equal(t, "--- FAIL: TestLogin (0.01s)", res.Line, "the first line that reads as a failure, colours stripped")
	assert.Contains(t, res.Command, "'-test.run=^$' x", "quoted as a shell would read it")
	log := readLog(t, s)
	assert.Contains(t, log, "login_test.go:12: want 200, got 500")
	assert.Contains(t, log, "[exited with status 1]")

	s = withMode(spec(t, "x"), "lint")
	res, err = Run(context.Background(), s)
	require.NoError(t, err)
	assert.Equal(t, "shelf/books.txt:2: trailing whitespace.", res.Line, "path:line: is a diagnostic")

	s = withMode(spec(t, "x"), "quiet")
	res, err = Run(context.Background(), s)
	require.NoError(t, err)
	assert.Equal(t, "exited with status 3", res.Line)
}

func TestStopsAtTheFirstFailure(t *testing.T) {
	s := spec(t)
	s.Commands = [][]string{{"false"}, {"touch", "ran"}}
	s.Env = Env(s.Dir, nil, nil)
	res, err := Run(context.Background(), s)
	require.NoError(t, err)
	assert.False(t, res.Passed)
	assert.Equal(t, "false", res.Command)
	assert.NoFileExists(t, filepath.Join(s.Dir, "ran"))

	s.Commands = [][]string{{"no-such-program-here"}}
	res, err = Run(context.Background(), s)
	require.NoError(t, err)
	assert.False(t, res.Passed)
	assert.Contains(t, res.Line, "did not run: no-such-program-here: not found on the checks' PATH")
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func grandchild(t *testing.T, pidfile string) int {
	t.Helper()
	data, err := os.ReadFile(pidfile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(string(data))
	require.NoError(t, err)
	return pid
}

// waitGone waits for a killed process to be reaped by init: a zombie still
// answers kill 0 for a moment.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && strings.Contains(string(data), ") Z ") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	assert.False(t, alive(pid), "process %d outlived its check", pid)
}

func TestAHangingCheckIsKilledWithItsGroup(t *testing.T) {
	s := spec(t, "x")
	pidfile := filepath.Join(s.Dir, "pid")
	s = withMode(s, "hang", "PIDFILE="+pidfile)
	s.Timeout = 2 * time.Second
	res, err := Run(context.Background(), s)
	require.NoError(t, err)
	assert.False(t, res.Passed)
	assert.True(t, res.TimedOut)
	assert.Equal(t, "timed out after 2s (killed with its process group)", res.Line)
	assert.Contains(t, readLog(t, s), "[killed with its process group: the checks took longer than 2s]")
	waitGone(t, grandchild(t, pidfile))
}

func TestNothingOutlivesAPassingCheck(t *testing.T) {
	s := spec(t, "x")
	pidfile := filepath.Join(s.Dir, "pid")
	s = withMode(s, "background", "PIDFILE="+pidfile)
	res, err := Run(context.Background(), s)
	require.NoError(t, err)
	assert.True(t, res.Passed)
	waitGone(t, grandchild(t, pidfile))
}

func TestCancelledRunGivesNoVerdict(t *testing.T) {
	s := spec(t, "x")
	pidfile := filepath.Join(s.Dir, "pid")
	s = withMode(s, "hang", "PIDFILE="+pidfile)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, s)
		done <- err
	}()
	require.Eventually(t, func() bool { _, err := os.Stat(pidfile); return err == nil }, 30*time.Second, 10*time.Millisecond)
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(30 * time.Second):
		t.Fatal("a cancelled run did not end")
	}
	waitGone(t, grandchild(t, pidfile))
}

func TestTheLogIsCapped(t *testing.T) {
	s := withMode(spec(t, "x"), "flood")
	s.LogLimit = 1 << 20
	res, err := Run(context.Background(), s)
	require.NoError(t, err)
	assert.False(t, res.Passed)
	assert.Equal(t, "FAIL at the very end", res.Line, "the line is found past the cut too")
	fi, err := os.Stat(s.Log)
	require.NoError(t, err)
	assert.Less(t, fi.Size(), int64(1<<20+4096))
	assert.Greater(t, res.Cut, int64(15<<20), "the rest was counted, not kept")
	assert.Contains(t, readLog(t, s), fmt.Sprintf("[log cut at 1048576 bytes: %d bytes more were not kept]", res.Cut))
}

func TestEnvIsClean(t *testing.T) {
	t.Setenv("FOREMAN_SECRET_TOKEN", "hunter2")
	t.Setenv("GIT_DIR", "/elsewhere")
	t.Setenv("PASSED_ON", "yes")
	s := spec(t, "x")
	s.Env = Env(s.Dir, []string{"HELPER=env", "PASSED_ON", "NOT_SET_ANYWHERE"}, map[string]string{"FOREMAN_COMMIT": "abc"})
	res, err := Run(context.Background(), s)
	require.NoError(t, err)
	require.True(t, res.Passed)
	log := readLog(t, s)
	assert.NotContains(t, log, "hunter2")
	assert.NotContains(t, log, "GIT_DIR")
	assert.NotContains(t, log, "NOT_SET_ANYWHERE")
	for _, want := range []string{"PASSED_ON=yes", "FOREMAN_COMMIT=abc", "TMPDIR=" + s.Dir, "CI=true", "WD=" + s.Dir, "PATH="} {
		assert.Contains(t, log, want)
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{10 * time.Minute: "10m", 90 * time.Minute: "1h30m", 2 * time.Hour: "2h", 2 * time.Second: "2s", 1500 * time.Millisecond: "1.5s"} {
		assert.Equal(t, want, short(d))
	}
}

// A secret of exactly MinSecret bytes is a secret: it never reaches the
// log or the verdict's line, where a shorter value is left alone.
func TestASecretOfTheShortestLengthIsRedacted(t *testing.T) {
	const secret = "s3cr3t!!" // MinSecret bytes
	require.Len(t, secret, MinSecret)
	s := spec(t)
	s.Commands = [][]string{{"sh", "-c", `echo "FAIL: the token is $TOKEN"; exit 1`}}
	s.Env = Env(s.Dir, []string{"TOKEN=" + secret}, nil)
	s.Secrets = []Secret{{Name: "host.env TOKEN", Value: secret}}
	res, err := Run(context.Background(), s)
	require.NoError(t, err)
	assert.False(t, res.Passed)
	assert.Equal(t, "FAIL: the token is [redacted: host.env TOKEN]", res.Line)
	assert.NotContains(t, readLog(t, s), secret)
	assert.Contains(t, readLog(t, s), "[redacted: host.env TOKEN]")
}

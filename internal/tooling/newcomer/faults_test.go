package newcomer

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTheReadmesPathThroughFaults is the README's one-command path with
// what a real build meets on the way: foreman up restarted mid-build (on
// the same port, so that everyone finds the room again), a check that
// fails for cart until the operator fixes the host (five failures, then
// ESCALATE cart ci-exhausted, then RESOLVE), an auditor that joins after
// the first review was asked for, builders that push several commits
// each. It ends at COMPLETE with one entry per component on main's
// first-parent line, each a merge of a builder's several commits, and
// foreman verify accounting for every one.
func TestTheReadmesPathThroughFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("builds foreman and runs a whole build on real git, restarting foreman up on the way")
	}
	u := newUser(t)
	installed(t, u)
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "olga", "GIT_AUTHOR_EMAIL": "olga@example.com",
		"GIT_COMMITTER_NAME": "olga", "GIT_COMMITTER_EMAIL": "olga@example.com"} {
		u.setenv(k, v)
	}
	dir := filepath.Join(u.dir, "shop")
	u.run(u.dir, "git init --initial-branch=main shop")
	u.run(dir, "git commit --allow-empty -m start")
	u.run(dir, initStep)

	// The host's check needs a tool that is missing for cart until the
	// operator installs it: here, a file whose presence fails the check.
	flags := filepath.Join(u.dir, "flags")
	require.NoError(t, os.MkdirAll(flags, 0o755))
	broken := filepath.Join(flags, "fail-cart")
	require.NoError(t, os.WriteFile(broken, nil, 0o644))
	config := filepath.Join(dir, "foreman.yaml")
	text, err := os.ReadFile(config)
	require.NoError(t, err)
	check := `  checks: ["sh -c 'test ! -e ` + flags + `/fail-$FOREMAN_COMPONENT'"]` + "\n  sandbox_paths:\n    ro: [" + flags + "]\n"
	edited := strings.Replace(string(text), "  checks: []\n", check, 1)
	require.NotEqual(t, string(text), edited, "foreman init writes host.checks")
	// Quicker than a stock room's pace of a message a second per sender:
	// this test is about faults, not pace (make demo-real keeps that).
	paced := strings.Replace(edited, "  channel: \"#build\"\n", "  channel: \"#build\"\n  rate_limit: 200ms\n", 1)
	require.NotEqual(t, edited, paced, "foreman init writes server.channel")
	edited = paced
	require.NoError(t, os.WriteFile(config, []byte(edited), 0o644))

	up := u.start(dir, "foreman up --listen 127.0.0.1:0 --http 127.0.0.1:0")
	ready := up.await(t, up.stdout, 1, `(?s)^(foreman up: .*Ctrl-C stops it all\.\n)`)[1]
	url := regexp.MustCompile(`export FOREMAN_SERVER_URL=(ws://(127\.0\.0\.1:\d+))\n`).FindStringSubmatch(ready)
	require.NotNil(t, url)
	u.setenv("FOREMAN_SERVER_URL", url[1])
	chatLine := regexp.MustCompile(`You, the operator \(olga\), in the room:\n  (.+)\n`).FindStringSubmatch(ready)
	require.NotNil(t, chatLine)
	operator := u.start(u.dir, chatLine[1])
	operator.await(t, operator.stdout, 1, `foreman +coordinator TASKS db\n`)

	b1 := u.start(dir, "foreman agent --role builder --name b1 --minute 300ms")
	b2 := u.start(dir, "foreman agent --role builder --name b2 --minute 300ms")
	// No auditor yet: the first review waits for one, who comes late.
	operator.await(t, operator.stdout, 1, `foreman +coordinator REVIEW db @[0-9a-f]+ \(b[12]\) b[12]/db\n`)
	aud := u.start(dir, "foreman agent --role auditor --name aud --minute 300ms")
	operator.await(t, operator.stdout, 1, `aud +AUDIT db PASS\n`)
	operator.await(t, operator.stdout, 1, `host +MERGED db\n`)

	// Restarted mid-build, on the same port: everyone comes back.
	up.stop(t)
	require.Equal(t, 0, up.cmd.ProcessState.ExitCode(), up.stderr.String())
	restarted := len(operator.stdout.String())
	up = u.start(dir, "foreman up --listen "+url[2]+" --http 127.0.0.1:0")
	up.await(t, up.stdout, 1, `Ctrl-C stops it all\.\n`)
	assert.Contains(t, up.stderr.String(), "resuming the build from the journal")

	// cart's check fails five times: foreman escalates; the operator
	// fixes the host and resolves it.
	operator.await(t, operator.stdout, 1, `foreman +coordinator ESCALATE cart ci-exhausted .*\n`)
	require.NoError(t, os.Remove(broken))
	operator.type_(t, "RESOLVE cart the check's tool is installed now")
	operator.await(t, operator.stdout, 1, `foreman +coordinator OK RESOLVE cart the check's tool is installed now\n`)
	operator.await(t, operator.stdout, 1, `foreman +coordinator COMPLETE bookshop\n`)
	assert.NotContains(t, operator.stdout.String()[restarted:], "may have missed lines", "up restarted in order: nothing was missed")
	assert.GreaterOrEqual(t, len(regexp.MustCompile(`host +CI cart FAIL `).FindAllString(operator.stdout.String(), -1)), 5)

	// main: one entry per component, each a merge of a builder's commits.
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.Output()
		require.NoError(t, err, "git %v", args)
		return strings.TrimSpace(string(out))
	}
	var landed []string
	for l := range strings.SplitSeq(git("log", "--first-parent", "--format=%H %s", "main"), "\n") {
		id, subject, _ := strings.Cut(l, " ")
		if subject == "start" {
			continue
		}
		m := regexp.MustCompile(`^Merge (b\d)/(\w+) \((\w+)\) into main$`).FindStringSubmatch(subject)
		require.NotNil(t, m, "an entry of main that is not a component's landing: %s", l)
		assert.Equal(t, m[2], m[3])
		landed = append(landed, m[3])
		n := git("rev-list", "--count", id+"^1.."+id+"^2")
		assert.NotContains(t, []string{"0", "1"}, n, "%s: its builder pushed %s commit(s)", m[3], n)
		assert.Contains(t, git("log", "-1", "--format=%B", id), "approved by @")
	}
	assert.ElementsMatch(t, []string{"db", "auth", "catalog", "cart", "payments", "mailer", "web"}, landed,
		"one entry per component:\n%s", git("log", "--first-parent", "--oneline", "main"))

	operator.type_(t, "/quit")
	assert.Equal(t, 0, operator.exited(t), operator.stderr.String())
	for _, p := range []*proc{aud, b2, b1, up} {
		p.stop(t)
		assert.Equal(t, 0, p.cmd.ProcessState.ExitCode(), "%s\n%s", p.name, p.stderr)
	}
	verify := exec.Command(words(chatLine[1])[0], "verify")
	verify.Dir, verify.Env = dir, u.env
	table, err := verify.CombinedOutput()
	require.NoError(t, err, "foreman verify:\n%s", table)
	assert.Regexp(t, `(?m)^main at [0-9a-f]{12} since [0-9a-f]{12}: 7 commits, 7 landed by foreman, 0 not landed by foreman, 0 receipts refused$`, string(table))
}

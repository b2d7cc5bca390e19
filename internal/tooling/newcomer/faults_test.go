package newcomer

import (
	"encoding/base64"
	"encoding/json"
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
// the same port, so that everyone finds the room again), the repository's
// own check (check.sh) failing for cart until the operator lands a fix to
// it through the host with the contract's own lines (five failures, then
// ESCALATE cart ci-exhausted, whose advice says how; ADD hotfix, ASSIGN
// hotfix to the operator, READY hotfix on the branch the operator pushed, checked
// by the check.sh it brings, audited, landed; then RESOLVE cart), an
// auditor that joins after the first review was asked for, builders that
// push several commits each. It ends at COMPLETE with one entry per
// component on main's first-parent line, the hotfix among them, and
// foreman verify accounting for every one, exit 0 (issue 48: a fix made
// by hand on main was "not landed by foreman").
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

	// The host's check is the repository's own, committed before the
	// build: it fails for cart until the operator fixes it.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "check.sh"), []byte(brokenCheck), 0o755))
	u.run(dir, "git add check.sh")
	u.run(dir, "git commit -m checks")
	config := filepath.Join(dir, "foreman.yaml")
	text, err := os.ReadFile(config)
	require.NoError(t, err)
	operatorID := regexp.MustCompile(`operators: \["(@[0-9a-f]+)"\]`).FindStringSubmatch(string(text))
	require.NotNil(t, operatorID, "foreman init names the operator in roles.operators:\n%s", text)
	edited := strings.Replace(string(text), "  checks: []\n", `  checks: ["./check.sh"]`+"\n", 1)
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

	// cart's check fails five times: foreman escalates, saying how a fix
	// to the checks lands. The operator pushes one to a branch and lands
	// it through the host like any change: checked (by the check.sh it
	// brings), audited, landed with a receipt; then resolves cart.
	esc := operator.await(t, operator.stdout, 1, `foreman +coordinator (ESCALATE cart ci-exhausted .*)\n`)[1]
	assert.Contains(t, esc, "land a fix to the checks (ADD hotfix, ASSIGN hotfix @you, READY hotfix <branch>), then RESOLVE cart")
	fixwork := filepath.Join(u.dir, "fixwork")
	u.run(u.dir, "git clone shop fixwork")
	require.NoError(t, os.WriteFile(filepath.Join(fixwork, "check.sh"), []byte(fixedCheck), 0o755))
	u.run(fixwork, "git commit -am 'check.sh: cart is checked as the rest'")
	u.run(fixwork, "git push origin HEAD:refs/heads/olga/hotfix")
	operator.type_(t, "ADD hotfix")
	operator.await(t, operator.stdout, 1, `foreman +coordinator OK ADD hotfix\n`)
	operator.type_(t, "ASSIGN hotfix "+operatorID[1])
	operator.await(t, operator.stdout, 1, `foreman +coordinator ACK hotfix `+operatorID[1]+` \(olga\)`)
	operator.type_(t, "READY hotfix olga/hotfix")
	operator.await(t, operator.stdout, 1, `host +CI hotfix PASS [0-9a-f]{40}\n`)
	operator.await(t, operator.stdout, 1, `aud +AUDIT hotfix PASS\n`)
	operator.await(t, operator.stdout, 1, `host +MERGED hotfix\n`)
	operator.type_(t, "RESOLVE cart check.sh is fixed on main")
	operator.await(t, operator.stdout, 1, `foreman +coordinator OK RESOLVE cart check.sh is fixed on main\n`)
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
		if subject == "start" || subject == "checks" {
			continue
		}
		m := regexp.MustCompile(`^Merge (b\d|olga)/(\w+) \((\w+)\) into main$`).FindStringSubmatch(subject)
		require.NotNil(t, m, "an entry of main that is not a component's landing: %s", l)
		assert.Equal(t, m[2], m[3])
		landed = append(landed, m[3])
		body := git("log", "-1", "--format=%B", id)
		assert.Contains(t, body, "approved by @")
		if m[3] == "hotfix" {
			assert.Contains(t, body, "built by "+operatorID[1], "the operator built the fix")
			continue
		}
		n := git("rev-list", "--count", id+"^1.."+id+"^2")
		assert.NotContains(t, []string{"0", "1"}, n, "%s: its builder pushed %s commit(s)", m[3], n)
	}
	assert.ElementsMatch(t, []string{"db", "auth", "catalog", "cart", "payments", "mailer", "web", "hotfix"}, landed,
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
	assert.Regexp(t, `(?m)^main at [0-9a-f]{12} since [0-9a-f]{12}: 8 commits, 8 landed by foreman, 0 not landed by foreman, 0 receipts refused$`, string(table))
	t.Logf("foreman verify:\n%s", table)
	assert.Regexp(t, `(?m)^[0-9a-f]{12}  landed +hotfix +Merge olga/hotfix \(hotfix\) into main +approved [0-9a-f]{12} by @[0-9a-f]+; .*; changed the checks \(check\.sh\)$`, string(table))

	// The fix's receipt names who built it and who approved it, and says
	// it changed the checks.
	fix := git("log", "--first-parent", "--format=%H", "--grep", "^Merge olga/hotfix (hotfix) into main$", "main")
	require.Len(t, fix, 40)
	var env struct{ Payload string }
	require.NoError(t, json.Unmarshal([]byte(git("notes", "--ref", "foreman", "show", fix)), &env))
	body, err := base64.StdEncoding.DecodeString(env.Payload)
	require.NoError(t, err)
	var st struct {
		Predicate struct {
			Builder       string   `json:"builder"`
			ChecksChanged []string `json:"checksChanged"`
			Approved      struct {
				Auditors []string `json:"auditors"`
			} `json:"approved"`
		} `json:"predicate"`
	}
	require.NoError(t, json.Unmarshal(body, &st), "%s", body)
	assert.Equal(t, operatorID[1], st.Predicate.Builder)
	assert.Len(t, st.Predicate.Approved.Auditors, 1)
	assert.Equal(t, []string{"check.sh"}, st.Predicate.ChecksChanged)
}

// The repository's check before the operator's fix, and after it.
const (
	brokenCheck = "#!/bin/sh\nif [ \"$FOREMAN_COMPONENT\" = cart ]; then\n  echo \"FAIL: check.sh does not know cart\"\n  exit 1\nfi\necho ok\n"
	fixedCheck  = "#!/bin/sh\necho ok\n"
)

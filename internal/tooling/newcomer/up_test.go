package newcomer

import (
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

// block is one fenced block of the README: its language and its lines.
type block struct {
	lang  string
	lines []string
}

// readmeSection returns the fenced blocks of a document of the
// repository (README.md, docs/RUNNING.md) between two headings, in order;
// to "" reads on to its end.
func readmeSection(t *testing.T, file, from, to string) []block {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, file))
	require.NoError(t, err)
	text := string(b)
	start := strings.Index(text, from)
	require.GreaterOrEqual(t, start, 0, "%s has %q", file, from)
	end := len(text) - start
	if to != "" {
		end = strings.Index(text[start:], to)
		require.Greater(t, end, 0, "%s has %q after %q", file, to, from)
	}
	var blocks []block
	var cur *block
	for l := range strings.SplitSeq(text[start:start+end], "\n") {
		switch {
		case cur == nil && strings.HasPrefix(l, "```"):
			cur = &block{lang: strings.TrimPrefix(l, "```")}
		case cur != nil && l == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, l)
		}
	}
	return blocks
}

// command is a shell line of the README without its comment.
func command(l string) string {
	if i := strings.Index(l, " #"); i >= 0 {
		l = l[:i]
	}
	return strings.TrimSpace(l)
}

// TestTheReadmesOneCommandPath walks "Running it for real" as its commands
// are written there, taken from the README itself, block by block: git
// init, cd, a first commit, foreman init, foreman up (with the README's
// line for free ports); the operator's chat command that foreman up prints;
// a builder that gives db up, the operator's RESOLVE typed in the chat,
// another builder, the auditor, one more builder "the same way"; until
// COMPLETE, with main holding every component's work, on real git. Then
// Ctrl-C stops foreman up, the host first and the room last.
func TestTheReadmesOneCommandPath(t *testing.T) {
	if testing.Short() {
		t.Skip("builds foreman and runs a whole build on real git across six processes")
	}
	blocks := readmeSection(t, "README.md", "## Running it for real", "## The main commands")
	var sh []block
	var typed []string
	for _, b := range blocks {
		switch b.lang {
		case "sh":
			sh = append(sh, b)
		case "":
			if len(b.lines) == 1 && strings.HasPrefix(b.lines[0], "RESOLVE ") {
				typed = append(typed, b.lines[0])
			}
		}
	}
	require.Len(t, sh, 5, "make install; git init to foreman up; b1; b2; the auditor")
	require.Equal(t, []string{resolveLine}, typed, "the line the operator types")
	steps := make([]string, 0, len(sh[1].lines))
	for _, l := range sh[1].lines {
		steps = append(steps, command(l))
	}
	require.Equal(t, []string{"git init --initial-branch=main shop", "cd shop", "git commit --allow-empty -m start",
		"foreman init --name olga", "foreman up"}, steps, "the path's commands, in order")
	freePorts := "foreman up --listen 127.0.0.1:0 --http 127.0.0.1:0"
	readme, err := os.ReadFile(filepath.Join(repo, "README.md"))
	require.NoError(t, err)
	require.Contains(t, strings.Join(strings.Fields(string(readme)), " "), freePorts, "the README's line for when the ports are taken")

	u := newUser(t)
	installed(t, u)
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "olga", "GIT_AUTHOR_EMAIL": "olga@example.com",
		"GIT_COMMITTER_NAME": "olga", "GIT_COMMITTER_EMAIL": "olga@example.com"} {
		u.setenv(k, v) // who makes the first commit, as the user's git config would say
	}
	dir := u.dir
	var up *proc
	for _, step := range steps {
		switch {
		case strings.HasPrefix(step, "cd "):
			dir = filepath.Join(dir, strings.TrimPrefix(step, "cd "))
		case step == "foreman up":
			up = u.start(dir, freePorts) // ports 6667 and 9090 may be anyone's here
		default:
			u.run(dir, step)
		}
	}
	require.NotNil(t, up)
	ready := up.await(t, up.stdout, 1, `(?s)^(foreman up: .*Ctrl-C stops it all\.\n)`)[1]
	t.Log("\n" + ready)
	url := regexp.MustCompile(`export FOREMAN_SERVER_URL=(ws://127\.0\.0\.1:\d+)\n`).FindStringSubmatch(ready)
	require.NotNil(t, url, "foreman up gives the room's free port to the others")
	u.setenv("FOREMAN_SERVER_URL", url[1])
	chatLine := regexp.MustCompile(`You, the operator \(olga\), in the room:\n  (.+)\n`).FindStringSubmatch(ready)
	require.NotNil(t, chatLine, "foreman up prints the operator's command")
	assert.True(t, filepath.IsAbs(words(chatLine[1])[0]), "the program's absolute path: %s", chatLine[1])
	assert.Regexp(t, `(?m)^  host     @[0-9a-f]+, checking `+regexp.QuoteMeta(dir)+` \(target main; checks: none\)$`, ready)

	operator := u.start(u.dir, chatLine[1]) // absolute paths: from anywhere
	operator.await(t, operator.stderr, 1, `olga: in #build\n`)
	operator.await(t, operator.stdout, 1, `foreman +coordinator TASKS db\n`)

	b1 := u.start(dir, sh[2].lines[0])
	operator.await(t, operator.stdout, 1, `foreman +coordinator ESCALATE db hard-blocker missing_dependency: no schema migration tool installed .*RESOLVE db`)
	operator.type_(t, typed[0])
	operator.await(t, operator.stdout, 1, `olga +operator +`+resolveLine+`\n`)
	operator.await(t, operator.stdout, 1, `foreman +coordinator OK `+resolveLine+`\n`)
	b2 := u.start(dir, sh[3].lines[0])
	aud := u.start(dir, sh[4].lines[0])
	operator.await(t, operator.stdout, 1, `foreman +coordinator ACK db @[0-9a-f]+ \(b2\) (branch=b1/db )?after ABORT by @[0-9a-f]+ \(b1\) .*: progress 25%\n`)
	operator.await(t, operator.stdout, 1, `host +CI db PASS [0-9a-f]{40}\n`)
	operator.await(t, operator.stdout, 1, `aud +AUDIT db PASS\n`)
	operator.await(t, operator.stdout, 1, `host +MERGED db\n`)
	// "Start more builders the same way, each with a name of its own."
	b3 := u.start(dir, strings.Replace(sh[3].lines[0], "--name b2", "--name b3", 1))
	operator.await(t, operator.stdout, 1, `foreman +coordinator COMPLETE bookshop\n`)

	git := exec.Command("git", "ls-tree", "-r", "--name-only", "main")
	git.Dir = dir
	files, err := git.Output()
	require.NoError(t, err)
	for _, c := range []string{"db", "auth", "catalog", "cart", "payments", "mailer", "web"} {
		assert.Contains(t, strings.Fields(string(files)), c+"/"+c+".txt", "main holds %s", c)
	}

	operator.type_(t, "/quit")
	assert.Equal(t, 0, operator.exited(t), operator.stderr.String())
	for _, p := range []*proc{b3, aud, b2, b1, up} {
		p.stop(t)
		assert.Equal(t, 0, p.cmd.ProcessState.ExitCode(), "%s\n%s", p.name, p.stderr)
	}
	// "foreman verify checks main commit by commit against the receipts":
	// beside the config foreman up ran, with no flag.
	verify := exec.Command(words(chatLine[1])[0], "verify")
	verify.Dir, verify.Env = dir, u.env
	table, err := verify.CombinedOutput()
	require.NoError(t, err, "foreman verify:\n%s", table)
	t.Logf("foreman verify:\n%s", table)
	assert.Regexp(t, `(?m)^main at [0-9a-f]{12} since [0-9a-f]{12}: 7 commits, 7 landed by foreman, 0 not landed by foreman, 0 receipts refused$`, string(table))
	logs := up.stderr.String()
	host := strings.Index(logs, "the host has stopped")
	bot := strings.Index(logs, "foreman has stopped: its journal is flushed")
	room := strings.Index(logs, "the room is closed")
	assert.True(t, host >= 0 && host < bot && bot < room, "Ctrl-C stops the host, then foreman, then the room:\n%s", logs)
}

// The README's MCP client configuration is what foreman mcp --print-config
// prints: absolute paths throughout, the program's included, since an MCP
// client starts it from anywhere, often without ~/go/bin on PATH.
func TestTheReadmesMCPConfigUsesAbsolutePaths(t *testing.T) {
	blocks := readmeSection(t, "docs/RUNNING.md", "## Connecting real agents", "")
	var found bool
	for _, b := range blocks {
		if b.lang != "json" {
			continue
		}
		found = true
		var doc struct {
			Servers map[string]struct {
				Command string   `json:"command"`
				Args    []string `json:"args"`
			} `json:"mcpServers"`
		}
		require.NoError(t, json.Unmarshal([]byte(strings.Join(b.lines, "\n")), &doc))
		require.NotEmpty(t, doc.Servers)
		for name, s := range doc.Servers {
			assert.True(t, filepath.IsAbs(s.Command), "%s: %q is not an absolute path", name, s.Command)
			for _, a := range s.Args {
				if strings.Contains(a, "/") && !strings.Contains(a, "://") {
					assert.True(t, filepath.IsAbs(a), "%s: %q is not an absolute path", name, a)
				}
			}
		}
	}
	assert.True(t, found, "docs/RUNNING.md shows an MCP client's configuration")
	running, err := os.ReadFile(filepath.Join(repo, "docs", "RUNNING.md"))
	require.NoError(t, err)
	assert.Contains(t, strings.Join(strings.Fields(string(running)), " "), "foreman mcp --print-config --identity .foreman/ada.json", "and says which command prints it")
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
)

// writeFile writes a file under dir and returns its path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

func TestStatusReadsTheConfigLikeRun(t *testing.T) {
	board := strings.TrimPrefix(statusServer(t, midBuild()).URL, "http://")
	config := writeFile(t, t.TempDir(), "shop.yaml", "http:\n  listen: "+board+"\n")
	for name, args := range map[string][]string{
		"argument": {"status", config},
		"--config": {"status", "-c", config},
	} {
		code, out, errOut := foreman(t, args...)
		require.Equal(t, 0, code, "%s: %s", name, errOut)
		assert.Contains(t, out, "build shop:", name)
	}

	t.Setenv("FOREMAN_HTTP_LISTEN", board)
	code, out, errOut := foreman(t, "status")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "build shop:")

	t.Setenv("FOREMAN_HTTP_LISTEN", "")
	code, _, errOut = foreman(t, "status", writeFile(t, t.TempDir(), "off.yaml", "http:\n  listen: \"\"\n"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "http.listen is off")
}

func TestBoardURL(t *testing.T) {
	for listen, want := range map[string]string{
		"127.0.0.1:9090":     "http://127.0.0.1:9090",
		":9090":              "http://127.0.0.1:9090",
		"0.0.0.0:9090":       "http://127.0.0.1:9090",
		"[::]:9090":          "http://127.0.0.1:9090",
		"board.lan:80":       "http://board.lan:80",
		"http://x:1/foreman": "http://x:1/foreman",
	} {
		got, err := boardURL(listen)
		require.NoError(t, err, listen)
		assert.Equal(t, want, got, listen)
	}
	_, err := boardURL("127.0.0.1:0")
	assert.ErrorContains(t, err, "picks a free port")
}

func TestAgentReadsTheRoomFromTheConfig(t *testing.T) {
	r := newAgentRoom(t)
	config := writeFile(t, t.TempDir(), "foreman.yaml", "server:\n  url: "+r.url+"\n  rate_limit: 5ms\n")
	_, stderr, _, stop := startAgent(t, strings.NewReader(""), "agent", config, "--role", "auditor", "--name", "aud")
	r.joined("aud")
	assert.Contains(t, stderr.String(), "joining #build at "+r.url)
	stop()

	t.Setenv("FOREMAN_SERVER_URL", r.url)
	_, _, _, stop = startAgent(t, strings.NewReader(""), "agent", "--role", "ci", "--name", "ci2", "--rate-limit", "5ms")
	r.joined("ci2")
	stop()
}

func TestIdentityTakesTheConfigAndItsPaths(t *testing.T) {
	dir := t.TempDir()
	config := writeFile(t, dir, "foreman.yaml", "server:\n  identity: keys/foreman.json\n")
	t.Chdir(t.TempDir())
	code, out, errOut := foreman(t, "identity", config)
	require.Equal(t, 0, code, errOut)
	path := filepath.Join(dir, "keys", "foreman.json")
	assert.Contains(t, out, "created "+path, "a path in the config is relative to the config")
	assert.Contains(t, out, "An AgentChat server calls foreman @")

	code, out, errOut = foreman(t, "identity", "--identity", "olga.json", "--name", "olga")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "created olga.json")
	assert.Contains(t, out, "An AgentChat server calls olga @", "the name given, not foreman's")
	assert.NotContains(t, out, "warning:")

	require.NoError(t, os.Chmod("olga.json", 0o644))
	code, out, _ = foreman(t, "identity", "--identity", "olga.json", "--name", "bob")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "The file already names its key olga; --name applies to new files only.")
	assert.Contains(t, out, "warning: identity file olga.json has mode 0644: others on this machine can read it")
}

func TestValidateFindsTheConfigAndWarns(t *testing.T) {
	t.Chdir(t.TempDir())
	code, _, errOut := foreman(t, "validate")
	assert.Equal(t, 1, code)
	assert.Equal(t, "foreman: no config file: name one (foreman validate CONFIG, or -c), set FOREMAN_CONFIG, or write foreman.yaml here with foreman init\n", errOut)

	writeFile(t, ".", "foreman.yaml", minimalBuild)
	code, out, errOut := foreman(t, "validate")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "warning: no operator configured (roles.operators is empty): nobody can RESOLVE")
	assert.Contains(t, out, "build build: 2 components, no cycles")

	id, err := agentchat.NewIdentity("me")
	require.NoError(t, err)
	writeFile(t, ".", "foreman.yaml", minimalBuild+"roles:\n  operators: [\""+id.AgentID()+"\"]\n")
	code, out, errOut = foreman(t, "validate")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "warning:")

	// rules.overlap is checked as every rule is, and wait without a CI
	// role to say OVERLAP is pointed out.
	withOperator := minimalBuild + "roles:\n  operators: [\"" + id.AgentID() + "\"]\n"
	writeFile(t, ".", "foreman.yaml", withOperator+"rules:\n  overlap: block\n")
	code, _, errOut = foreman(t, "validate")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "rules.overlap")
	assert.Contains(t, errOut, `"block" is not warn or wait`)
	writeFile(t, ".", "foreman.yaml", withOperator+"rules:\n  overlap: wait\n")
	code, out, errOut = foreman(t, "validate")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "warning: rules.overlap is wait, but roles.ci is empty")
	writeFile(t, ".", "foreman.yaml", strings.Replace(withOperator, "roles:\n", "roles:\n  ci: [\"@0123456789abcdef\"]\n", 1)+"rules:\n  overlap: wait\n")
	code, out, errOut = foreman(t, "validate")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "warning:")
}

const minimalBuild = "build:\n  components:\n    - name: db\n    - name: api\n      depends_on: [db]\n"

// A wrong server.url ends foreman run after a few attempts, however long
// they take, with the URL in its last line and a failing status; the
// missing operator is logged first.
func TestRunSaysWhenItCannotReachTheRoom(t *testing.T) {
	t.Chdir(t.TempDir())
	writeFile(t, ".", "foreman.yaml", minimalBuild+"server:\n  url: ws://127.0.0.1:1\nhttp:\n  listen: \"\"\n")
	var stdout, stderr syncBuffer // the bot logs from more than one goroutine
	code := run([]string{"run"}, &stdout, &stderr)
	errOut := stderr.String()
	assert.Equal(t, 1, code)
	assert.True(t, strings.HasSuffix(errOut, "the URL is server.url in foreman.yaml: check it, and that the server runs\n"), errOut)
	assert.Contains(t, errOut, "\nforeman: cannot reach the chat server at ws://127.0.0.1:1 (6 attempts")
	assert.Contains(t, errOut, "no operator configured (roles.operators is empty)", "logged before joining, as validate warns")
}

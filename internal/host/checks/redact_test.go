package checks

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/checkspec"
)

func TestSilentFailureSaysHowItEnded(t *testing.T) {
	s := withMode(spec(t, "x"), "quiet")
	res, err := Run(context.Background(), s)
	require.NoError(t, err)
	assert.Equal(t, "exited with status 3", res.Line)
	assert.True(t, res.Silent, "no output: the line says how it ended")

	s = spec(t)
	s.Commands = [][]string{{"sh", "-c", "test -f README"}}
	s.Env = Env(s.Dir, nil, nil)
	res, err = Run(context.Background(), s)
	require.NoError(t, err)
	assert.False(t, res.Passed)
	assert.Equal(t, "sh -c 'test -f README'", res.Command, "quoted as a shell would read it")
	assert.True(t, res.Silent)
	assert.Equal(t, "exited with status 1", res.Line)
	log := readLog(t, s)
	assert.Contains(t, log, "$ sh -c 'test -f README'\n")
	assert.Contains(t, log, "[exited with status 1]")
}

func TestSecretsNeverReachTheLogOrTheLine(t *testing.T) {
	const token = "ghp_0123456789abcdefSECRET"
	s := withMode(spec(t, "x"), "secret", "SECRET="+token)
	s.Secrets = []Secret{{Name: "host.env SECRET", Value: token}}
	res, err := Run(context.Background(), s)
	require.NoError(t, err)
	assert.Equal(t, "FAIL: could not log in with [redacted: host.env SECRET]", res.Line)
	log := readLog(t, s)
	assert.NotContains(t, log, token)
	assert.NotContains(t, log, token[5:], "not even split across two writes")
	assert.Contains(t, log, "the token is [redacted: host.env SECRET]\n")

	// Without the secret named, the same check shows it: the test proves
	// the redaction.
	s.Secrets = nil
	_, err = Run(context.Background(), s)
	require.NoError(t, err)
	assert.Contains(t, readLog(t, s), token)
}

// Every split of the output into two writes, and secrets that overlap or
// repeat, come out redacted.
func TestRedactorStreams(t *testing.T) {
	secrets := []Secret{{Name: "a", Value: "topsecret-one"}, {Name: "b", Value: "secret-one-two"}, {Name: "short", Value: "abc"}}
	text := "x topsecret-one y secret-one-two z topsecret-onetopsecret-one abc secret-one-tw"
	want := "x [redacted: a] y [redacted: b] z [redacted: a][redacted: a] abc secret-one-tw"
	for cut := 0; cut <= len(text); cut++ {
		var out strings.Builder
		r := newRedactor(&out, secrets)
		_, _ = r.Write([]byte(text[:cut]))
		_, _ = r.Write([]byte(text[cut:]))
		r.flush()
		require.Equal(t, want, out.String(), "cut at %d", cut)
	}
	var out strings.Builder
	r := newRedactor(&out, nil)
	_, _ = r.Write([]byte("plain"))
	r.flush()
	assert.Equal(t, "plain", out.String())
}

func TestQuote(t *testing.T) {
	for want, argv := range map[string][]string{
		"make test":                     {"make", "test"},
		"sh -c 'test -f README'":        {"sh", "-c", "test -f README"},
		`sh -c 'echo '\''hi'\'''`:       {"sh", "-c", "echo 'hi'"},
		"grep -q ''":                    {"grep", "-q", ""},
		"go test ./... '-run=^TestX$'":  {"go", "test", "./...", "-run=^TestX$"},
		"env 'A=$HOME' /usr/bin/x":      {"env", "A=$HOME", "/usr/bin/x"},
		"git diff --check 4b825dc HEAD": {"git", "diff", "--check", "4b825dc", "HEAD"},
	} {
		assert.Equal(t, want, Quote(argv))
		if !strings.Contains(want, `\'`) { // Split reads no backslashes
			back, err := checkspec.Split(want)
			require.NoError(t, err, want)
			assert.Equal(t, argv, back, "what the log shows reads back as what ran")
		}
	}
}

package checks

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
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
		r := newRedactor(&out, secrets, false)
		_, _ = r.Write([]byte(text[:cut]))
		_, _ = r.Write([]byte(text[cut:]))
		r.flush()
		require.Equal(t, want, out.String(), "cut at %d", cut)
	}
	var out strings.Builder
	r := newRedactor(&out, nil, false)
	_, _ = r.Write([]byte("plain"))
	r.flush()
	assert.Equal(t, "plain", out.String())
}

// encodings are what a check may print a secret as, each written as the
// tool that writes it would: base64 of the secret with 0, 1 or 2 bytes
// before it (the three alignments) and some after, padded or not, in both
// alphabets, wrapped at 76 as base64(1) does; hex in both cases, wrapped
// at 60 as xxd -p does; URL-encoded three ways.
//
// head and tail are how many characters of each may be left around the
// name: base64 characters that also hold bits of the bytes around it.
type encoded struct {
	text       string
	head, tail int
}

func encodings(secret string) map[string]encoded {
	out := map[string]encoded{}
	for _, enc := range []struct {
		name string
		e    *base64.Encoding
	}{{"std", base64.StdEncoding}, {"raw std", base64.RawStdEncoding}, {"url", base64.URLEncoding}, {"raw url", base64.RawURLEncoding}} {
		for before := 0; before < 3; before++ {
			for after := 0; after < 3; after++ {
				data := strings.Repeat("<", before) + secret + strings.Repeat(">", after)
				text := enc.e.EncodeToString([]byte(data))
				out[fmt.Sprintf("base64 %s, %d before, %d after", enc.name, before, after)] = encoded{wrap(text, 76, "\n"),
					(8*before + 5) / 6, len(text) - 8*(before+len(secret))/6}
			}
		}
	}
	text := base64.StdEncoding.EncodeToString([]byte(secret))
	out["base64 wrapped with CRLF"] = encoded{wrap(text, 10, "\r\n"), 0, len(text) - 8*len(secret)/6}
	out["hex"] = encoded{text: wrap(hex.EncodeToString([]byte(secret)), 60, "\n")}
	out["HEX"] = encoded{text: strings.ToUpper(hex.EncodeToString([]byte(secret)))}
	out["query escape"] = encoded{text: url.QueryEscape(secret)}
	out["path escape"] = encoded{text: url.PathEscape(secret)}
	var all strings.Builder
	for _, c := range []byte(secret) {
		fmt.Fprintf(&all, "%%%02x", c)
	}
	out["every byte %xx"] = encoded{text: all.String()}
	out["every byte %XX"] = encoded{text: strings.ToUpper(all.String())}
	return out
}

func wrap(s string, width int, nl string) string {
	var b strings.Builder
	for len(s) > width {
		b.WriteString(s[:width] + nl)
		s = s[width:]
	}
	b.WriteString(s)
	return b.String()
}

// Each secret is redacted in every form a check may print it in, wherever
// the output is cut into writes; with the secrets looked for as they are
// only (as before issue 45), every form but the plain one gets through.
func TestEncodedSecretsAreRedacted(t *testing.T) {
	secrets := []Secret{
		{Name: "host.env TOKEN", Value: "ghp_T0KEN+with/slash=and?query&more"},
		{Name: "the host's key", Value: "MC4CAQAwBQYDK2VwBCIEIMm1xg4rVXJ3cOZDpBNKyW9qfj6Y0t0mzMPdPQ6DY7Ff"},
		{Name: "short", Value: "8chars!!"},
	}
	for _, sec := range secrets {
		for form, enc := range encodings(sec.Value) {
			text := "before " + enc.text + " after\n"
			leaked := func(out string) bool {
				flat := strings.NewReplacer("\n", "", "\r", "").Replace(out)
				head, rest, ok := strings.Cut(flat, "[redacted: "+sec.Name+"]")
				if !ok || !strings.HasPrefix(head, "before ") || !strings.HasSuffix(rest, " after") {
					return true
				}
				// What is left of the encoding around the name: at most the
				// base64 characters that also hold bits of what surrounds it.
				return len(head)-len("before ") > enc.head || len(rest)-len(" after") > enc.tail
			}
			step := 1
			if len(text) > 200 {
				step = 7
			}
			for cut := 0; cut <= len(text); cut += step {
				var out strings.Builder
				r := newRedactor(&out, secrets, false)
				_, _ = r.Write([]byte(text[:cut]))
				_, _ = r.Write([]byte(text[cut:]))
				r.flush()
				require.False(t, leaked(out.String()), "%s, %s, cut at %d:\n%s", sec.Name, form, cut, out.String())
			}
			var out strings.Builder
			r := newRedactor(&out, secrets, true)
			_, _ = r.Write([]byte(text))
			r.flush()
			if enc.text != sec.Value {
				assert.True(t, leaked(out.String()), "looked for as it is only, %s of %s must get through, or the test proves nothing", form, sec.Name)
			}
		}
	}
}

// A form spread over blank lines is not looked for: the bytes held back
// stay bounded whatever the output, and a flood of line breaks goes on.
func TestRedactorHoldsLittleBack(t *testing.T) {
	var out strings.Builder
	r := newRedactor(&out, []Secret{{Name: "k", Value: "a-secret-value"}}, false)
	_, _ = r.Write([]byte(strings.Repeat("\n", 1<<20)))
	assert.Greater(t, out.Len(), 1<<20-200)
	assert.Less(t, len(r.buf), 200)
	r.flush()
	assert.Equal(t, 1<<20, out.Len())
}

func BenchmarkRedactor(b *testing.B) {
	var secrets []Secret
	for i := 0; i < 16; i++ {
		secrets = append(secrets, Secret{Name: fmt.Sprint(i), Value: fmt.Sprintf("secret-%02d-%s", i, strings.Repeat("x", 60))})
	}
	line := []byte("ok  \tgithub.com/agentforeman/foreman/internal/host/checks\t0.123s coverage: 81.2% of statements\n")
	chunk := []byte(strings.Repeat(string(line), 32<<10/len(line)))
	r := newRedactor(discard{}, secrets, false)
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		_, _ = r.Write(chunk)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

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

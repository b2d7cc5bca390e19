package checks

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Env is the whole environment checks run in, built rather than inherited:
// PATH and HOME from the host (a check needs its tools, and their caches
// under HOME), a private TMPDIR, the C.UTF-8 locale, then each of pass
// (NAME to copy the host's value, NAME=value to set one), then set. What
// the host itself holds in its environment (tokens, keys, FOREMAN_*) does
// not leak into a check unless pass names it.
func Env(tmp string, pass []string, set map[string]string) []string {
	env := map[string]string{"LANG": "C.UTF-8", "TMPDIR": tmp, "CI": "true"}
	for _, k := range []string{"PATH", "HOME", "USER", "LOGNAME"} {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	if env["PATH"] == "" {
		env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
	}
	for _, p := range pass {
		if name, value, ok := strings.Cut(p, "="); ok {
			env[name] = value
		} else if v, ok := os.LookupEnv(p); ok {
			env[p] = v
		}
	}
	for k, v := range set {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckEnvEntry checks one host.env entry: NAME or NAME=value.
func CheckEnvEntry(s string) error {
	name, _, _ := strings.Cut(s, "=")
	if !envNameRE.MatchString(name) {
		return fmt.Errorf("%q is not NAME or NAME=value", s)
	}
	return nil
}

// Split reads one check as written in the configuration into a program
// and its arguments: words are split on spaces, and single or double
// quotes group words, as a shell would, but nothing else a shell does
// happens (no variables, globs, pipes or redirections). Write sh -c '...'
// to have a shell.
func Split(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		case r < 0x20:
			return nil, fmt.Errorf("%q holds a control character", s)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("%q has an unclosed %c quote", s, quote)
	}
	if inWord {
		out = append(out, cur.String())
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%q is empty", s)
	}
	return out, nil
}

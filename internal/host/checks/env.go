package checks

import (
	"os"
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

package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// httpEnv is the environment git talks to an HTTP remote in: git's smart
// HTTP only (no ext::, no file://), no credential helper of the user's,
// and headers (an Authorization) with every request, set through the
// environment as git -c would set them, but out of the command line,
// where another process could read them.
func httpEnv(headers []string, more ...[2]string) []string {
	settings := [][2]string{{"protocol.allow", "never"}, {"protocol.http.allow", "always"}, {"protocol.https.allow", "always"},
		{"credential.helper", ""}, {"fetch.writeCommitGraph", "false"}}
	settings = append(settings, more...)
	for _, h := range headers {
		settings = append(settings, [2]string{"http.extraHeader", h})
	}
	env := []string{"GIT_CONFIG_COUNT=" + strconv.Itoa(len(settings))}
	for i, kv := range settings {
		n := strconv.Itoa(i)
		env = append(env, "GIT_CONFIG_KEY_"+n+"="+kv[0], "GIT_CONFIG_VALUE_"+n+"="+kv[1])
	}
	return env
}

func checkHTTP(url string) error {
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		return fmt.Errorf("%s is not an http:// or https:// URL", url)
	}
	return nil
}

// FetchMirror makes the refs under each remote prefix (refs/heads/) at
// url the refs under its local prefix (refs/foreman/gate/heads/) here,
// exactly: moved where they moved, even backwards (a host's rebase), and
// gone where they went. headers go with every request, as for Fetch.
func (r *Repo) FetchMirror(ctx context.Context, url string, prefixes map[string]string, headers ...string) error {
	if err := checkHTTP(url); err != nil {
		return err
	}
	args := []string{"fetch", "--quiet", "--no-tags", "--prune", "--no-write-fetch-head", "--no-auto-maintenance", "--end-of-options", url}
	for remote, local := range prefixes {
		args = append(args, "+"+strings.TrimSuffix(remote, "/")+"/*:"+strings.TrimSuffix(local, "/")+"/*")
	}
	_, _, err := r.runEnv(ctx, r.dir, nil, httpEnv(headers, [2]string{"protocol.version", "2"}), args...)
	return err
}

// RefusedPush is a push the remote refused for a reason of its own (a
// push gate's namespace, a hook): not a ref that moved, so not worth
// trying again as it is.
type RefusedPush struct {
	Ref, Why string
}

func (e *RefusedPush) Error() string {
	return fmt.Sprintf("the push to %s was refused: %s", e.Ref, e.Why)
}

// Push moves ref (a full name) at url to commit new only if it holds old
// there now ("" for none): a compare-and-swap, as UpdateRef is here, the
// remote's receive-pack checking old under its own ref lock. ErrMoved if
// the ref held something else; a *RefusedPush if the remote refused it
// for another reason.
func (r *Repo) Push(ctx context.Context, url, ref, new, old string, headers ...string) error {
	if err := checkHTTP(url); err != nil {
		return err
	}
	out, _, err := r.runEnv(ctx, r.dir, nil, httpEnv(headers),
		"push", "--porcelain", "--no-verify", "--force-with-lease="+ref+":"+old, "--end-of-options", url, new+":"+ref)
	if err == nil {
		return nil
	}
	// --porcelain: "<flag>\t<from>:<to>\t<summary> (<reason>)" per ref.
	for _, line := range strings.Split(out, "\n") {
		fields := strings.SplitN(line, "\t", 3)
		if len(fields) != 3 || fields[0] != "!" {
			continue
		}
		summary := fields[2]
		switch {
		case strings.HasPrefix(summary, "[rejected]"):
			return ErrMoved // stale info, fetch first, non-fast-forward: it moved
		case strings.HasPrefix(summary, "[remote rejected]"):
			why := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(summary, "[remote rejected]")), "("), ")")
			if strings.Contains(why, "lock") || strings.Contains(why, "failed to update ref") {
				return ErrMoved // lost the race at the remote's ref lock
			}
			return &RefusedPush{Ref: ref, Why: why}
		}
	}
	return err
}

// IsRefusedPush reports whether err is a push the remote refused.
func IsRefusedPush(err error) bool {
	var rp *RefusedPush
	return errors.As(err, &rp)
}

package newcomer

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/agents"
	"github.com/agentforeman/foreman/internal/host/sandbox"
)

// attacker is an agent of the config's agents: that tries, once started
// by foreman up, what an agent must not do: read the host's key, write
// another agent's workspace, push to another agent's namespace (straight
// into host.repo, and through the push gate with its own token); it says
// how each went, then waits to be stopped. Writing its own workspace is
// the control: it ran, where it should.
const attacker = `
try() { name=$1; shift; if "$@" >/dev/null 2>&1; then echo "attack $name: done"; else echo "attack $name: refused"; fi; }
try own sh -c 'echo mine > ./mine'
try key cat "$HOST_KEY"
try write sh -c 'echo pwned > "$VICTIM_WORK/pwned"'
try push git push -q "$HOST_REPO" "HEAD:refs/heads/$VICTIM_NS/evil"
try gate git -c "http.extraHeader=Authorization: Bearer $FOREMAN_PUSH_TOKEN" push -q "$FOREMAN_PUSH_URL" "HEAD:refs/heads/$VICTIM_NS/gate"
echo "attacks done"
exec sleep 600
`

// Issue 46: an agent foreman up starts is confined (host.sandbox on, the
// default): it cannot read the host's key, write another agent's
// workspace, or push to another agent's namespace; with host.sandbox off
// (the plain launcher, as this user) the same agent does the first three.
// The push gate refuses the push to another's namespace either way: that
// is the gate's defence, not the box's.
func TestUpConfinesItsAgents(t *testing.T) {
	if testing.Short() {
		t.Skip("builds foreman and runs foreman up with two agents, twice")
	}
	if _, _, err := sandbox.Landlock(); err != nil {
		t.Skipf("no Landlock here: %v", err)
	}
	for _, tc := range []struct {
		name    string
		sandbox string
		want    map[string]string
	}{
		{"confined", "on", map[string]string{"own": "done", "key": "refused", "write": "refused", "push": "refused", "gate": "refused"}},
		{"unconfined", "off", map[string]string{"own": "done", "key": "done", "write": "done", "push": "done", "gate": "refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUser(t)
			installed(t, u)
			u.run(u.dir, "git init --initial-branch=main shop")
			dir := u.dir + "/shop"
			u.run(dir, "git -c user.name=olga -c user.email=olga@example.com commit --allow-empty -m start")
			u.run(dir, initStep)
			letAgentsIn(t, dir)

			// The victim's workspace, made as foreman up makes it, so that
			// its id (its namespace) is known before up starts.
			root := filepath.Join(dir, ".foreman", "agents")
			require.NoError(t, os.MkdirAll(filepath.Join(root, "b1"), 0o700))
			require.NoError(t, os.WriteFile(filepath.Join(root, "b1", agents.Marker), nil, 0o600))
			victim, _, err := agentchat.LoadOrCreateIdentity(filepath.Join(root, "b1", "identity.json"), "b1")
			require.NoError(t, err)
			ns := strings.TrimPrefix(victim.AgentID(), "@")

			file := filepath.Join(dir, "foreman.yaml")
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			conf := strings.Replace(string(data), "  checks: []\n", "  checks: []\n  sandbox: "+tc.sandbox+"\n", 1)
			require.NotEqual(t, string(data), conf, "foreman init's host: section")
			q := func(s string) string { return `"` + s + `"` }
			conf += "agents:\n" +
				"  - name: b1\n    role: builder\n    command: [sh, -c, 'exec sleep 600']\n" +
				"  - name: evil\n    role: builder\n    command: [sh, -c, " + q(strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(attacker)) + "]\n" +
				"    env:\n" +
				"      HOST_KEY: " + q(filepath.Join(dir, ".foreman", "host.json")) + "\n" +
				"      HOST_REPO: " + q(dir) + "\n" +
				"      VICTIM_WORK: " + q(filepath.Join(root, "b1", "work")) + "\n" +
				"      VICTIM_NS: " + q(ns) + "\n"
			require.NoError(t, os.WriteFile(file, []byte(conf), 0o644))

			up := u.start(dir, "foreman up --listen 127.0.0.1:0 --http 127.0.0.1:0")
			ready := up.await(t, up.stdout, 1, `(?s)^(foreman up: .*Ctrl-C stops it all\.\n)`)[1]
			if tc.sandbox == "on" {
				assert.Contains(t, ready, "confined (host.sandbox): ")
			} else {
				assert.Contains(t, up.stderr.String(), "host.sandbox is off: the agents run unconfined")
			}
			log := filepath.Join(root, "evil", "agent.log")
			done := regexp.MustCompile(`(?m)^attacks done$`) // not in the command its log starts with
			deadline := time.Now().Add(patience)
			for {
				b, _ := os.ReadFile(log)
				if done.Match(b) {
					break
				}
				select {
				case <-up.done:
					t.Fatalf("foreman up ended before the attacks were done\n%s\n%s", b, up.stderr)
				case <-time.After(20 * time.Millisecond):
				}
				if time.Now().After(deadline) {
					t.Fatalf("the attacker never finished:\n%s\n%s", b, up.stderr)
				}
			}
			b, err := os.ReadFile(log)
			require.NoError(t, err)
			got := map[string]string{}
			for _, line := range strings.Split(string(b), "\n") {
				if what, how, ok := strings.Cut(strings.TrimPrefix(line, "attack "), ": "); ok && strings.HasPrefix(line, "attack ") {
					got[what] = how
				}
			}
			assert.Equal(t, tc.want, got, "the attacker's log:\n%s", b)

			// What each attack left, seen from outside.
			_, err = os.Stat(filepath.Join(root, "b1", "work", "pwned"))
			assert.Equal(t, tc.want["write"] == "done", err == nil, "b1's workspace written: %v", err)
			git := exec.Command("git", "for-each-ref", "--format=%(refname)", "refs/heads/"+ns+"/")
			git.Dir = dir
			refs, err := git.Output()
			require.NoError(t, err)
			want := ""
			if tc.want["push"] == "done" {
				want = "refs/heads/" + ns + "/evil\n"
			}
			assert.Equal(t, want, string(refs), "b1's namespace in host.repo")
			up.stop(t)
		})
	}
}

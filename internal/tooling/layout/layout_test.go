package layout

import (
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/agentforeman/foreman"

// pkg is what go list -json says of one package: what its own files
// import (tests aside) and all it links.
type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// packages lists every package of the module, as go list -json reads it.
func packages(t *testing.T) map[string]pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	cmd.Dir = "../../.."
	out, err := cmd.Output()
	require.NoError(t, err, "go list -json")
	dec := json.NewDecoder(strings.NewReader(string(out)))
	all := map[string]pkg{}
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		all[rel(p.ImportPath)] = p
	}
	require.Contains(t, all, "internal/config", "go list found the module's packages")
	return all
}

// rel is a package's directory in the repository ("" for another
// module's).
func rel(path string) string {
	if path == module {
		return "."
	}
	if r, ok := strings.CutPrefix(path, module+"/"); ok {
		return r
	}
	return ""
}

// under reports whether dir is one of dirs or inside one.
func under(dir string, dirs ...string) bool {
	for _, d := range dirs {
		if dir == d || strings.HasPrefix(dir, d+"/") {
			return true
		}
	}
	return false
}

// A rule: no package in from (directories, with what is inside them;
// none: every package) imports a package in to (none: any of the
// module's), unless that one is in from too or inside except.
type rule struct {
	why    string
	from   []string
	except []string
	to     []string
}

// The layers, lowest first: protocol and the coordinator (the pure core),
// agentchat (the room, a library of its own), the configuration, then the
// host, the worker and the shell; test support sits beside them and the
// binary never links it. A package never imports one above it.
var rules = []rule{
	{why: "a command's package is its main: nothing imports it", to: []string{"cmd"}},
	{why: "the contract's grammar and the engine are pure: they import none of foreman's shell",
		from: []string{"protocol", "coordinator"}, to: []string{"internal", "agentchat", "transcript", "cmd"}},
	{why: "agentchat is a library of its own: it imports nothing of foreman but the test-support leaves",
		from: []string{"agentchat"}, except: []string{"internal/testkit"}},
	{why: "every part reads the configuration: it imports none of them (what the host's keys mean, it reads with internal/checkspec)",
		from: []string{"internal/config", "internal/checkspec"},
		to:   []string{"internal/host", "internal/worker", "internal/up", "internal/web", "internal/bot", "internal/tooling", "internal/cluster", "internal/mcpagent", "cmd"}},
	{why: "the host reaches its workers through NATS (internal/host/remote), never by holding foreman worker (internal/worker)",
		from: []string{"internal/host"}, to: []string{"internal/worker"}},
	{why: "test-support leaves import nothing of foreman, so anything may use them",
		from: []string{"internal/testkit"}},
}

// broken lists every import that breaks a rule, as "from imports to: why".
func broken(all map[string]pkg) []string {
	var out []string
	for _, r := range rules {
		for dir, p := range all {
			if len(r.from) > 0 && !under(dir, r.from...) {
				continue
			}
			for _, imp := range p.Imports {
				to := rel(imp)
				if to == "" || under(to, r.except...) || len(r.from) > 0 && under(to, r.from...) {
					continue
				}
				if len(r.to) == 0 || under(to, r.to...) {
					out = append(out, fmt.Sprintf("%s imports %s: %s", dir, to, r.why))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestNoImportPointsUp: the layers' rules hold for every package's own
// files (a test may reach further: a host test starts a worker).
func TestNoImportPointsUp(t *testing.T) {
	require.Empty(t, broken(packages(t)))
}

// testSupport is what only tests link: the binary never does.
var testSupport = []string{"internal/testkit", "internal/tooling/natstest", "internal/tooling/roomtest", "agentchat/internal/chattest"}

// TestTheBinaryLinksNoTestSupport: foreman carries none of its tests'
// helpers (a proxy that cuts connections, a NATS server for tests).
func TestTheBinaryLinksNoTestSupport(t *testing.T) {
	all := packages(t)
	main, ok := all["cmd/foreman"]
	require.True(t, ok)
	var linked []string
	for _, d := range main.Deps {
		if under(rel(d), testSupport...) {
			linked = append(linked, rel(d))
		}
	}
	require.Empty(t, linked, "cmd/foreman links test support")
}

// The rules catch what they are for: each import the layout once had,
// put back, is named.
func TestTheRulesCatchTheOldImports(t *testing.T) {
	all := packages(t)
	for _, bad := range []struct{ from, to string }{
		{"agentchat/internal/chattest", "internal/tooling/tcpproxy"},
		{"internal/config", "internal/host/sandbox"},
		{"internal/config", "internal/host/checks"},
		{"internal/host/live", "internal/worker"},
		{"coordinator", "internal/journal"},
		{"internal/testkit/tcpproxy", "internal/config"},
	} {
		planted := map[string]pkg{}
		for k, v := range all {
			planted[k] = v
		}
		p := planted[bad.from]
		p.Imports = append(slices.Clone(p.Imports), module+"/"+bad.to)
		planted[bad.from] = p
		got := broken(planted)
		require.Len(t, got, 1, "%s importing %s", bad.from, bad.to)
		require.Contains(t, got[0], bad.from+" imports "+bad.to)
	}
}

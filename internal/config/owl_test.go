package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/coordinator"
)

func TestOwlSpec(t *testing.T) {
	spec, err := ReadOwlSpec("../../examples/bookshop")
	require.NoError(t, err)
	assert.Equal(t, []coordinator.Component{
		{Name: "db"},
		{Name: "auth", Deps: []string{"db"}},
		{Name: "catalog", Deps: []string{"db"}},
		{Name: "cart", Deps: []string{"auth", "catalog"}},
		{Name: "payments", Deps: []string{"cart"}},
		{Name: "mailer", Deps: []string{"payments"}},
		{Name: "web", Deps: []string{"catalog", "cart", "payments"}},
	}, spec.Components)
	assert.Equal(t, 2, spec.Count(Note), "postgres and the card processor sandbox are outside requirements")
	assert.Equal(t, 3, spec.Count(Literal), "web's bullets are names in backticks")
	assert.Empty(t, spec.Warnings)

	path := writeConfig(t, "build:\n  spec: "+mustAbs(t, "../../examples/bookshop")+"\n")
	c, err := Load(path, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, spec.Components, c.Build.Components)
	assert.Equal(t, spec, c.Build.Owl)
}

func TestOwlSpecRelativeToConfigFile(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec", "components")
	require.NoError(t, os.MkdirAll(spec, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(spec, "a.md"), []byte("# a\n\ndepends on:\n- b: thing\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(spec, "b.md"), []byte("# b\n"), 0o644))
	path := filepath.Join(dir, "foreman.yaml")
	require.NoError(t, os.WriteFile(path, []byte("build:\n  spec: spec\n"), 0o644))
	c, err := Load(path, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, []coordinator.Component{{Name: "a", Deps: []string{"b"}}, {Name: "b"}}, c.Build.Components)

	_, err = Load(writeConfig(t, "build:\n  spec: nowhere\n"), nil, nil)
	assert.Regexp(t, `^build.spec: .*/nowhere: no such directory$`, err.Error(), "a missing spec is named as missing")
	_, err = Load(writeConfig(t, "build:\n  spec: "+path+"\n"), nil, nil)
	assert.EqualError(t, err, "build.spec: "+path+" is a file, not an owl spec directory")
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	require.NoError(t, err)
	return a
}

func TestOwlSpecInOneFile(t *testing.T) {
	spec, err := ReadOwlSpec("testdata/relay")
	require.NoError(t, err)
	assert.Equal(t, []coordinator.Component{
		{Name: "server", Deps: []string{"protocol", "identity"}},
		{Name: "client", Deps: []string{"server", "identity", "protocol"}},
		{Name: "identity"},
		{Name: "protocol"},
	}, spec.Components, "product.md's plain bullets give the order")
	var notes []string
	for _, b := range spec.Bullets {
		if b.Reading == Note || b.Reading == None {
			notes = append(notes, b.At+" "+b.Reading.String()+": "+b.Text+": "+b.Why)
		}
	}
	assert.Equal(t, []string{
		"components.md:14 note: operating system (network, filesystem): names no component",
		"components.md:32 none: nothing (pure crypto, one file): ",
		"components.md:39 note: protocol itself, trivially: names no component but protocol itself",
	}, notes)
}

func TestOwlSpecLayoutsTogether(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "components"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "components", "web.md"), []byte("# web\n\ndepends on:\n- [api](../components.md#db) - the JSON API\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "components.md"), []byte("## api\n\ndepends on:\n- **db**: tables\n\n## db\n"), 0o644))
	spec, err := ReadOwlSpec(dir)
	require.NoError(t, err)
	assert.Equal(t, []coordinator.Component{{Name: "api", Deps: []string{"db"}}, {Name: "db"}, {Name: "web", Deps: []string{"api"}}}, spec.Components,
		"a link's target is not read: web names api, not db")
	assert.Zero(t, spec.Count(Note))

	require.NoError(t, os.WriteFile(filepath.Join(dir, "components.md"), []byte("## api\n\n## web\n"), 0o644))
	_, err = ReadOwlSpec(dir)
	assert.EqualError(t, err, `components.md:3: component "web" is also in components/web.md`)

	_, err = ReadOwlSpec(t.TempDir())
	assert.ErrorContains(t, err, "has no components: neither components/NAME.md files nor a components.md")
}

// A spec written as prose, in the shape of AgentChat's own (one
// components.md, a section per component with state, capabilities,
// interfaces, "depends on:" and invariants), reads as a person would draw
// it: the graph below was drawn by hand from the spec before it was read.
func TestOwlSpecWrittenAsProse(t *testing.T) {
	spec, err := ReadOwlSpec("testdata/tidepool")
	require.NoError(t, err)
	assert.Equal(t, []coordinator.Component{
		{Name: "store"},
		{Name: "queue", Deps: []string{"store"}},
		{Name: "auth", Deps: []string{"store"}},
		{Name: "api", Deps: []string{"store", "queue", "auth", "blobs"}},
		{Name: "scheduler", Deps: []string{"queue", "store"}},
		{Name: "sandbox"},
		{Name: "blobs"},
		{Name: "worker", Deps: []string{"queue", "sandbox", "blobs"}},
		{Name: "notifier", Deps: []string{"api", "store"}},
		{Name: "client", Deps: []string{"api"}},
		{Name: "cli", Deps: []string{"client"}},
		{Name: "dashboard", Deps: []string{"client"}},
	}, spec.Components)
	assert.Equal(t, 16, spec.Count(Prose))
	assert.Equal(t, 1, spec.Count(None), "sandbox: nothing (wraps the host's container runtime)")
	assert.Equal(t, 14, spec.Count(Note), "SQLite, clocks, libraries, a reachable server, and bullets naming only their own component")
	assert.Empty(t, spec.Warnings)

	words := map[string][]string{}
	for _, c := range spec.Components {
		for _, d := range spec.Read(c.Name) {
			if len(d.Words) > 0 {
				words[c.Name+" -> "+d.Name] = d.Words
			}
		}
	}
	assert.Equal(t, map[string][]string{
		"api -> queue":        {"job queue"},
		"api -> auth":         {"auth middleware"},
		"worker -> queue":     {"job-queue leases"},
		"client -> api":       {"api's OpenAPI"},
		"cli -> client":       {"@tidepool/client"},
		"dashboard -> client": {"tidepool-client"},
	}, words, "the words that named each dependency, where they say more than its name")
}

// Each rule of the reading, on one bullet of component "mcp-server" in a
// spec that also has server, client, runner, identity, escrow-hooks and
// web.api.
func TestOwlBulletRules(t *testing.T) {
	names := []string{"server", "client", "runner", "identity", "mcp-server", "escrow-hooks", "web.api"}
	for _, tc := range []struct {
		bullet  string
		reading Reading
		deps    string // the names, and the words shown for each
		why     string
	}{
		// A component named as a whole word anywhere in the bullet.
		{"agentchat server (websocket connection)", Prose, "server=agentchat server", ""},
		{"a websocket server", Prose, "server=websocket server", ""},
		{"Ed25519 keys (from identity module)", Prose, "identity=identity module", ""},
		{"Identity verification", Prose, "identity=Identity verification", ""},
		{"the server's socket", Prose, "server=server's socket", ""},
		{"[the relay](server.md)", Note, "", "names no component"},
		// Not inside a longer word, nor a file name or an identifier.
		{"servers and clientele", Note, "", "names no component"},
		{"receipts at identity.json and SERVER_URL", Note, "", "names no component"},
		// Whole segments of a package-like name.
		{"agent-runner (runtime abstraction layer)", Prose, "runner=agent-runner", ""},
		{"@acme/client (typed calls)", Prose, "client=@acme/client", ""},
		{"/var/run/server/socket", Prose, "server=/var/run/server/socket", ""},
		{"runner-ish helpers", Prose, "runner=runner-ish helpers", ""},
		// The longest name wins; names with - and . are whole words too.
		{"escrow-hooks events", Prose, "escrow-hooks=escrow-hooks events", ""},
		{"escrow hooks", Note, "", "names no component"},
		{"web.api schema", Prose, "web.api=web.api schema", ""},
		{"the client-server handshake", Prose, "client=client-server handshake server=client-server handshake", ""},
		// Several names, several dependencies, each once.
		{"client library, which dials the server; client retries", Prose, "client=client library server=", ""},
		// A self-reference is ignored.
		{"mcp-server config file", Note, "", "names no component but mcp-server itself"},
		{"an mcp-server per client", Prose, "client=per client", ""},
		// None, nothing.
		{"none", None, "", ""},
		{"Nothing (pure functions, no I/O on the server)", None, "", ""},
		{"nothing.", None, "", ""},
		// The author's escape hatches.
		{"`runner`", Literal, "runner", ""},
		{"`client` (the server's wire library, through the identity module)", Literal, "client", ""},
		{"component: identity, for signatures from the server", Literal, "identity", ""},
		{"Component: `server`", Literal, "server", ""},
		{"`mcp-server`", Note, "", "names the component itself"},
		{"`serverr` - the relay", Note, "", "taken literally, names no component"},
		{"MCP protocol over the server (note)", Note, "", "marked (note)"},
		{"`client` (note)", Note, "", "marked (note)"},
		{"`` then the server", Prose, "server=", ""},
	} {
		b := readBullet(tc.bullet, "mcp-server", newComponentNames(names))
		var deps []string
		for _, d := range b.Deps {
			if b.Reading == Literal {
				deps = append(deps, d.Name)
			} else {
				deps = append(deps, d.Name+"="+shown(d))
			}
		}
		assert.Equal(t, tc.reading, b.Reading, tc.bullet)
		assert.Equal(t, tc.deps, strings.Join(deps, " "), tc.bullet)
		assert.Equal(t, tc.why, b.Why, tc.bullet)
	}
}

// shown is the words kept for a dependency: none when they are its name.
func shown(d Dep) string {
	if strings.EqualFold(d.Words, d.Name) {
		return ""
	}
	return d.Words
}

// A literal name that names nothing is left out, with a warning that says
// where, rather than failing the spec: the rest of it still builds.
func TestOwlSpecLiteralNameOfNothing(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "components.md"), []byte(
		"## client\n\ndepends on:\n- `sever` - the relay\n- component: server\n\n## server\n"), 0o644))
	spec, err := ReadOwlSpec(dir)
	require.NoError(t, err)
	assert.Equal(t, []coordinator.Component{{Name: "client", Deps: []string{"server"}}, {Name: "server"}}, spec.Components)
	assert.Equal(t, []string{
		`components.md:4: client depends on "` + "`sever`" + ` - the relay", taken literally, but no component is named sever (did you mean server?): left out`,
	}, spec.Warnings)
}

// When prose would make a cycle, the bullets that make it are left out so
// that the build can start, and a warning names them by file and line.
func TestOwlSpecProseCycle(t *testing.T) {
	dir := t.TempDir()
	write := func(components string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "components.md"), []byte(components), 0o644))
	}
	write(`## ledger

depends on:
- the archive of old entries
- clock

## archive

depends on:
- ledger snapshots (nightly)

## clock

depends on:
- nothing
`)
	spec, err := ReadOwlSpec(dir)
	require.NoError(t, err)
	assert.Equal(t, []coordinator.Component{
		{Name: "archive"}, {Name: "clock"}, {Name: "ledger", Deps: []string{"clock"}},
	}, spec.Components, "both prose bullets of the cycle are left out; the rest stays")
	assert.Equal(t, []OwlCycle{{Path: "archive -> ledger -> archive", At: []string{"components.md:4", "components.md:10"}}}, spec.Cycles)
	assert.Equal(t, []string{
		"components.md:4, components.md:10: read as prose, these bullets make a dependency cycle archive -> ledger -> archive: left out so that the build can start; mark the wrong one (note), or write the right one as component: NAME",
	}, spec.Warnings)
	_, cycle := Graph(spec.Components).Order()
	assert.Nil(t, cycle)
	for _, b := range spec.Bullets {
		if b.At == "components.md:4" || b.At == "components.md:10" {
			require.Len(t, b.Deps, 1)
			assert.True(t, b.Deps[0].Cut, "the bullet still says what it named, and that it was left out")
		}
	}

	// The author says which is meant: the literal one stays, the prose one goes.
	write(strings.Replace(spec0(t, dir), "- the archive of old entries", "- component: archive", 1))
	spec, err = ReadOwlSpec(dir)
	require.NoError(t, err)
	assert.Equal(t, []coordinator.Component{
		{Name: "archive"}, {Name: "clock"}, {Name: "ledger", Deps: []string{"archive", "clock"}},
	}, spec.Components)
	assert.Equal(t, []OwlCycle{{Path: "archive -> ledger -> archive", At: []string{"components.md:10"}}}, spec.Cycles)

	// Or marks the wrong one a note: no cycle, nothing left out.
	write(strings.Replace(spec0(t, dir), "- ledger snapshots (nightly)", "- ledger snapshots (note)", 1))
	spec, err = ReadOwlSpec(dir)
	require.NoError(t, err)
	assert.Empty(t, spec.Cycles)
	assert.Empty(t, spec.Warnings)

	// A cycle written literally is the author's: it is kept, and the
	// engine halts on it as on any declared cycle.
	write("## a\n\ndepends on:\n- `b`\n- c, through b\n\n## b\n\ndepends on:\n- `a`\n\n## c\n\ndepends on:\n- a (it calls back)\n")
	spec, err = ReadOwlSpec(dir)
	require.NoError(t, err)
	assert.Equal(t, []coordinator.Component{
		{Name: "a", Deps: []string{"b"}}, {Name: "b", Deps: []string{"a"}}, {Name: "c"},
	}, spec.Components, "a's prose bullet names c and b: a -> c -> a is cut, a -> b is literal")
	g := Graph(spec.Components)
	_, cycle = g.Order()
	assert.Equal(t, "a -> b -> a", g.Format(cycle))
	assert.Equal(t, []OwlCycle{{Path: "a -> c -> a", At: []string{"components.md:5", "components.md:15"}}}, spec.Cycles)
}

func spec0(t *testing.T, dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "components.md"))
	require.NoError(t, err)
	return string(b)
}

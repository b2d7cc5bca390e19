package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/coordinator"
)

func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "foreman.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o644))
	return path
}

const minimal = `
build:
  components:
    - name: db
    - name: api
      depends_on: [db]
`

func TestExampleConfigLoads(t *testing.T) {
	c, err := Load("../../config.example.yaml", nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "bookshop", c.Build.Name)
	assert.Len(t, c.Build.Components, 7)
	assert.Equal(t, coordinator.DefaultRules(), c.Rules, "the example documents the defaults")
	assert.Equal(t, "#build", c.Server.Channel)
	assert.Equal(t, time.Second, c.Server.RateLimit)
}

func TestExampleDocumentsEveryKey(t *testing.T) {
	example, err := os.ReadFile("../../config.example.yaml")
	require.NoError(t, err)
	for _, key := range Keys() {
		leaf := key[strings.LastIndexByte(key, '.')+1:]
		assert.Contains(t, string(example), leaf+":", "config.example.yaml should document %s", key)
	}
}

func TestDefaults(t *testing.T) {
	c, err := Load(writeConfig(t, minimal), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "ws://127.0.0.1:6667", c.Server.URL)
	assert.Equal(t, "build", c.Build.Name)
	assert.Equal(t, []coordinator.Component{{Name: "db"}, {Name: "api", Deps: []string{"db"}}}, c.Build.Components)
	assert.Equal(t, coordinator.DefaultRules(), c.Rules)
}

func TestErrorsNameTheKey(t *testing.T) {
	cases := map[string]struct{ yaml, key string }{
		"unknown key":          {minimal + "rules:\n  chekin_interval: 5m\n", "rules.chekin_interval: unknown key (did you mean rules.checkin_interval?)"},
		"unknown section":      {minimal + "servr:\n  url: ws://x\n", "servr.url: unknown key"},
		"bad duration":         {minimal + "rules:\n  checkin_interval: 10 minutes\n", "rules.checkin_interval:"},
		"negative count":       {minimal + "rules:\n  missed_checkins: -1\n", "rules.missed_checkins:"},
		"bad bool":             {minimal + "rules:\n  ci_gating: sometimes\n", "rules.ci_gating:"},
		"bad merge":            {minimal + "rules:\n  merge: squash\n", "rules.merge:"},
		"unknown dependency":   {"build:\n  components:\n    - name: api\n      depends_on: [dbb]\n    - name: db\n", `build.components[0].depends_on: "dbb" is not a component (did you mean db?)`},
		"duplicate":            {"build:\n  components:\n    - name: api\n    - name: api\n", `build.components[1].name: "api" is declared twice`},
		"bad name":             {"build:\n  components:\n    - name: \"a b\"\n", "build.components[0].name:"},
		"emphasis name":        {"build:\n  components:\n    - name: a__b\n", "build.components[0].name:"},
		"component key":        {"build:\n  components:\n    - name: a\n      needs: [b]\n", "build.components[0].needs: unknown key"},
		"bad url":              {minimal + "server:\n  url: http://x\n", "server.url:"},
		"bad channel":          {minimal + "server:\n  channel: build\n", "server.channel:"},
		"bad rate":             {minimal + "server:\n  rate_limit: -1s\n", "server.rate_limit:"},
		"bad flood":            {minimal + "server:\n  flood_limit: -2\n", "server.flood_limit:"},
		"bad role":             {minimal + "roles:\n  operators: [alice]\n", "roles.operators:"},
		"bad level":            {minimal + "log:\n  level: loud\n", "log.level:"},
		"both sources":         {minimal + "  spec: x\n", "build.spec:"},
		"overflowing deadline": {minimal + "rules:\n  missed_checkins: 20000000\n", "rules.missed_checkins: 20000000 is over the most allowed, 1000"},
		"deadline over a year": {minimal + "rules:\n  checkin_interval: 720h\n  missed_checkins: 13\n", "rules.missed_checkins: 13 x checkin_interval"},
		"huge message":         {minimal + "server:\n  max_message: 99999999999\n", "server.max_message: 99999999999 is more than a room takes"},
		"slow rate":            {minimal + "server:\n  rate_limit: 2h\n", "server.rate_limit: 2h0m0s is over the most allowed, 1m0s"},
		"huge history":         {minimal + "server:\n  history: 9999999\n", "server.history: 9999999 is over the most allowed"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Load(writeConfig(t, tc.yaml), nil, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.key)
			assert.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}

func TestBuildIsRequiredOnlyWhereUsed(t *testing.T) {
	c, err := Load(writeConfig(t, "server:\n  channel: \"#ops2\"\n"), nil, nil)
	require.NoError(t, err, "a server-only config loads")
	assert.Equal(t, "#ops2", c.Server.Channel)
	assert.ErrorContains(t, c.RequireBuild(), "build.components: no components")

	c, err = Load("", nil, nil)
	require.NoError(t, err, "no file at all: defaults")
	assert.Error(t, c.RequireBuild())
}

func TestBadYAMLIsOneLine(t *testing.T) {
	_, err := Load(writeConfig(t, "build: [\n  nope"), nil, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not valid YAML")
	assert.NotContains(t, err.Error(), "\n")

	_, err = Load(filepath.Join(t.TempDir(), "missing.yaml"), nil, nil)
	assert.ErrorContains(t, err, "no such config file")
}

func TestEnvironmentAndFlagsOverride(t *testing.T) {
	t.Setenv("FOREMAN_RULES_CHECKIN_INTERVAL", "2m")
	t.Setenv("FOREMAN_SERVER_CHANNEL", "#env")
	t.Setenv("FOREMAN_ROLES_OPERATORS", "@op1 @op2")
	flags := pflag.NewFlagSet("test", pflag.ContinueOnError)
	flags.String("channel", "", "")
	require.NoError(t, flags.Parse([]string{"--channel", "#flag"}))

	c, err := Load(writeConfig(t, minimal+"rules:\n  checkin_interval: 5m\n"), flags, map[string]string{"channel": "server.channel"})
	require.NoError(t, err)
	assert.Equal(t, 2*time.Minute, c.Rules.CheckinInterval, "environment beats the file")
	assert.Equal(t, "#flag", c.Server.Channel, "a flag beats the environment")
	assert.Equal(t, []string{"@op1", "@op2"}, c.Roles.Operators)
}

func TestUnknownEnvironmentSetting(t *testing.T) {
	t.Setenv("FOREMAN_RULES_CHEKIN", "5m")
	c, err := Load(writeConfig(t, minimal), nil, nil)
	require.NoError(t, err)
	require.Len(t, c.Warnings, 1)
	assert.Contains(t, c.Warnings[0], "FOREMAN_RULES_CHEKIN: unknown environment setting, ignored")
}

func TestOwlSpec(t *testing.T) {
	comps, notes, err := ReadOwlSpec("../../examples/bookshop")
	require.NoError(t, err)
	assert.Equal(t, []coordinator.Component{
		{Name: "db"},
		{Name: "auth", Deps: []string{"db"}},
		{Name: "catalog", Deps: []string{"db"}},
		{Name: "cart", Deps: []string{"auth", "catalog"}},
		{Name: "payments", Deps: []string{"cart"}},
		{Name: "mailer", Deps: []string{"payments"}},
		{Name: "web", Deps: []string{"catalog", "cart", "payments"}},
	}, comps)
	assert.Len(t, notes, 2, "postgres and the card processor sandbox are outside requirements")

	path := writeConfig(t, "build:\n  spec: "+mustAbs(t, "../../examples/bookshop")+"\n")
	c, err := Load(path, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, comps, c.Build.Components)
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
	comps, notes, err := ReadOwlSpec("testdata/relay")
	require.NoError(t, err)
	assert.Equal(t, []coordinator.Component{
		{Name: "server", Deps: []string{"protocol", "identity"}},
		{Name: "client", Deps: []string{"identity", "protocol"}},
		{Name: "identity"},
		{Name: "protocol"},
	}, comps, "product.md's plain bullets give the order; a bullet whose first word is a component is a dependency")
	assert.Equal(t, []string{
		`components.md:14: server depends on "operating system (network, filesystem)": taken as a note, not a dependency (its first word names no other component)`,
		`components.md:23: client depends on "a websocket server": taken as a note, not a dependency (its first word names no other component)`,
		`components.md:32: identity depends on "nothing (pure crypto, one file)": taken as a note, not a dependency (its first word names no other component)`,
		`components.md:39: protocol depends on "protocol itself, trivially": taken as a note, not a dependency (its first word names no other component)`,
	}, notes)
}

func TestOwlSpecLayoutsTogether(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "components"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "components", "web.md"), []byte("# web\n\ndepends on:\n- [api](../components.md#api) - the JSON API\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "components.md"), []byte("## api\n\ndepends on:\n- **db**: tables\n\n## db\n"), 0o644))
	comps, notes, err := ReadOwlSpec(dir)
	require.NoError(t, err)
	assert.Equal(t, []coordinator.Component{{Name: "api", Deps: []string{"db"}}, {Name: "db"}, {Name: "web", Deps: []string{"api"}}}, comps)
	assert.Empty(t, notes)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "components.md"), []byte("## api\n\n## web\n"), 0o644))
	_, _, err = ReadOwlSpec(dir)
	assert.EqualError(t, err, `components.md:3: component "web" is also in components/web.md`)

	_, _, err = ReadOwlSpec(t.TempDir())
	assert.ErrorContains(t, err, "has no components: neither components/NAME.md files nor a components.md")
}

// A name a stock server would redact cannot be claimed: say so.
func TestRedactedNamesAreWarned(t *testing.T) {
	c, err := Load(writeConfig(t, "build:\n  name: shop\n  components:\n    - name: db\n    - name: kiosk-paymentterminaldriver\n"), nil, nil)
	require.NoError(t, err)
	require.Len(t, c.Build.Warnings, 1)
	assert.Equal(t, `component "kiosk-paymentterminaldriver" looks like a secret (openai_api_key) to a stock AgentChat server, which shows it as "kio[REDACTED:openai_api_key]": agents cannot name it; rename it`, c.Build.Warnings[0])
}

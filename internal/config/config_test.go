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
		"unknown key":            {minimal + "rules:\n  chekin_interval: 5m\n", "rules.chekin_interval: unknown key (did you mean rules.checkin_interval?)"},
		"unknown section":        {minimal + "servr:\n  url: ws://x\n", "servr.url: unknown key"},
		"bad duration":           {minimal + "rules:\n  checkin_interval: 10 minutes\n", "rules.checkin_interval:"},
		"negative count":         {minimal + "rules:\n  missed_checkins: -1\n", "rules.missed_checkins:"},
		"bad bool":               {minimal + "rules:\n  ci_gating: sometimes\n", "rules.ci_gating:"},
		"bad merge":              {minimal + "rules:\n  merge: squash\n", "rules.merge:"},
		"unknown dependency":     {"build:\n  components:\n    - name: api\n      depends_on: [dbb]\n    - name: db\n", `build.components[0].depends_on: "dbb" is not a component (did you mean db?)`},
		"duplicate":              {"build:\n  components:\n    - name: api\n    - name: api\n", `build.components[1].name: "api" is declared twice`},
		"bad name":               {"build:\n  components:\n    - name: \"a b\"\n", "build.components[0].name:"},
		"emphasis name":          {"build:\n  components:\n    - name: a__b\n", "build.components[0].name:"},
		"component key":          {"build:\n  components:\n    - name: a\n      needs: [b]\n", "build.components[0].needs: unknown key"},
		"bad url":                {minimal + "server:\n  url: http://x\n", "server.url:"},
		"bad channel":            {minimal + "server:\n  channel: build\n", "server.channel:"},
		"bad rate":               {minimal + "server:\n  rate_limit: -1s\n", "server.rate_limit:"},
		"bad flood":              {minimal + "server:\n  flood_limit: -2\n", "server.flood_limit:"},
		"bad role":               {minimal + "roles:\n  operators: [alice]\n", "roles.operators:"},
		"bad level":              {minimal + "log:\n  level: loud\n", "log.level:"},
		"both sources":           {minimal + "  spec: x\n", "build.spec:"},
		"overflowing deadline":   {minimal + "rules:\n  missed_checkins: 20000000\n", "rules.missed_checkins: 20000000 is over the most allowed, 1000"},
		"deadline over a year":   {minimal + "rules:\n  checkin_interval: 720h\n  missed_checkins: 13\n", "rules.missed_checkins: 13 x checkin_interval"},
		"huge message":           {minimal + "server:\n  max_message: 99999999999\n", "server.max_message: 99999999999 is more than a room takes"},
		"slow rate":              {minimal + "server:\n  rate_limit: 2h\n", "server.rate_limit: 2h0m0s is over the most allowed, 1m0s"},
		"huge history":           {minimal + "server:\n  history: 9999999\n", "server.history: 9999999 is over the most allowed"},
		"bad keepalive":          {minimal + "mcp:\n  keepalive: forever\n", `mcp.keepalive: "forever" is not a duration`},
		"budget of no component": {minimal + "budgets:\n  components:\n    - {name: api, budget: 1}\n    - {name: dbb, budget: 1}\n", `budgets.components[1].name: "dbb" is not a component of the build (did you mean db?)`},
		"bad budget":             {minimal + "budgets:\n  components:\n    - {name: api, budget: five}\n", `budgets.components[0].budget: "five" is not a budget`},
		"budget twice":           {minimal + "budgets:\n  components:\n    - {name: api, budget: 1}\n    - {name: api, budget: 2}\n", `budgets.components[1].name: "api" has a budget already`},
		"budget key":             {minimal + "budgets:\n  components:\n    - {name: api, limit: 1}\n", `budgets.components[0].limit: unknown key (an entry has name and budget)`},
		"budget without name":    {minimal + "budgets:\n  components:\n    - {budget: 1}\n", `budgets.components[0]: needs both name and budget`},
		"budgets as a map":       {minimal + "budgets:\n  components:\n    api: 1\n", `budgets.components: is not a list of {name, budget}`},
		"agent budget bare id":   {minimal + "budgets:\n  agents:\n    - {id: b1, budget: 1}\n", `budgets.agents[0].id: "b1" is not a sender id`},
		"board name a URL":       {minimal + "http:\n  names: [\"https://board.example\"]\n", `http.names: "https://board.example" is not a host or host:port`},
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

// Budgets by name and by id, over the defaults: the names keep their case
// and dots (a map's keys would not), "" is none whatever the default.
func TestBudgetsByNameAndID(t *testing.T) {
	c, err := Load(writeConfig(t, `
build:
  components:
    - name: db
    - name: Api.v2
budgets:
  component: 1
  agent: 10
  build: 100
  components:
    - {name: Api.v2, budget: "5,200000t"}
    - {name: db, budget: ""}
  agents:
    - {id: "@B1.x", budget: 20}
`), nil, nil)
	require.NoError(t, err)
	usd := func(d int64) coordinator.Limit { return coordinator.Limit{USD: d * 1_000_000, HasUSD: true} }
	assert.Equal(t, coordinator.Budgets{Component: usd(1), Agent: usd(10), Build: usd(100),
		Components: map[string]coordinator.Limit{"Api.v2": {USD: 5_000_000, HasUSD: true, Tokens: 200000, HasTokens: true}, "db": {}},
		Agents:     map[string]coordinator.Limit{"@B1.x": usd(20)}}, c.Budgets)
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

// A name a stock server would redact cannot be claimed: say so.
func TestRedactedNamesAreWarned(t *testing.T) {
	c, err := Load(writeConfig(t, "build:\n  name: shop\n  components:\n    - name: db\n    - name: kiosk-paymentterminaldriver\n"), nil, nil)
	require.NoError(t, err)
	require.Len(t, c.Build.Warnings, 1)
	assert.Equal(t, `component "kiosk-paymentterminaldriver" looks like a secret (openai_api_key) to a stock AgentChat server, which shows it as "kio[REDACTED:openai_api_key]": agents cannot name it; rename it`, c.Build.Warnings[0])
}

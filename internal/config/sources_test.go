package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPathsAreRelativeToTheConfigFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "project")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	path := filepath.Join(dir, "foreman.yaml")
	require.NoError(t, os.WriteFile(path, []byte(minimal+"record:\n  path: runs/session.txt\n"), 0o644))

	c, err := Load(path, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, ".foreman/identity.json"), c.Server.Identity, "a default is the file's too")
	assert.Equal(t, filepath.Join(dir, ".foreman/journal"), c.Journal)
	assert.Equal(t, filepath.Join(dir, "runs/session.txt"), c.Record)

	t.Setenv("FOREMAN_JOURNAL_PATH", "elsewhere")
	flags := pflag.NewFlagSet("run", pflag.ContinueOnError)
	flags.String("identity", "", "")
	require.NoError(t, flags.Parse([]string{"--identity", "me.json"}))
	c, err = Load(path, flags, map[string]string{"identity": "server.identity"})
	require.NoError(t, err)
	assert.Equal(t, "me.json", c.Server.Identity, "a flag is typed relative to the working directory")
	assert.Equal(t, "elsewhere", c.Journal, "and so is a variable")

	c, err = Load("", nil, nil)
	require.NoError(t, err)
	assert.Equal(t, ".foreman/identity.json", c.Server.Identity, "no file: the working directory")
	assert.Empty(t, c.Record, "no record stays none")
}

func TestYAMLErrorsGiveTheLineAtFault(t *testing.T) {
	cases := map[string]struct{ yaml, want string }{
		"indent in a list":  {"build:\n  components:\n    - name: db\n    - name: api\n     depends_on: [db]\n", ":5:6: not valid YAML: "},
		"unclosed bracket":  {"build:\n  components:\n    - name: db\n    - name: api\n      depends_on: [db\n    - name: web\n", ":6:"},
		"missing colon":     {"rules:\n  checkin_interval: 5m\n  missed_checkins 3\n  audit_attempts: 2\n", ":3:"},
		"a tab":             {"build:\n  name: x\n\tspec: y\n", ":3:1: not valid YAML: found character '\\t'"},
		"key defined twice": {"build:\n  name: a\n  name: b\n", ":3:3: not valid YAML: mapping key \"name\" already defined"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := writeConfig(t, tc.yaml)
			_, err := Load(path, nil, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), path+tc.want)
			assert.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}

func TestEnvironmentErrorsNameTheVariable(t *testing.T) {
	t.Setenv("FOREMAN_RULES_MISSED_CHECKINS", "x")
	_, err := Load(writeConfig(t, minimal), nil, nil)
	assert.EqualError(t, err, `FOREMAN_RULES_MISSED_CHECKINS: "x" is not a whole number`)

	t.Setenv("FOREMAN_RULES_MISSED_CHECKINS", "")
	t.Setenv("FOREMAN_SERVER_URL", "http://x")
	_, err = Load(writeConfig(t, minimal), nil, nil)
	assert.ErrorContains(t, err, `FOREMAN_SERVER_URL: "http://x" is not a ws:// or wss:// URL`)

	_, err = Load(writeConfig(t, minimal+"rules:\n  missed_checkins: x\n"), nil, nil)
	require.Error(t, err)
	t.Setenv("FOREMAN_SERVER_URL", "")
	_, err = Load(writeConfig(t, minimal+"rules:\n  missed_checkins: x\n"), nil, nil)
	assert.EqualError(t, err, `rules.missed_checkins: "x" is not a whole number`, "the file's own value names the key")

	// Rules out of bounds together: the one that set the key is named.
	t.Setenv("FOREMAN_RULES_MISSED_CHECKINS", "2")
	_, err = Load(writeConfig(t, minimal+"rules:\n  checkin_interval: 8000h\n"), nil, nil)
	assert.ErrorContains(t, err, "FOREMAN_RULES_MISSED_CHECKINS: 2 x checkin_interval 8000h0m0s is a deadline over the most allowed")
	t.Setenv("FOREMAN_RULES_MISSED_CHECKINS", "")
	_, err = Load(writeConfig(t, minimal+"rules:\n  checkin_interval: 8000h\n  missed_checkins: 2\n"), nil, nil)
	assert.ErrorContains(t, err, "rules.missed_checkins: 2 x checkin_interval")
}

func TestAMisspeltDependencyIsNeverTheComponentItself(t *testing.T) {
	_, err := Load(writeConfig(t, "build:\n  components:\n    - name: api\n      depends_on: [apii]\n    - name: web\n"), nil, nil)
	assert.EqualError(t, err, `build.components[0].depends_on: "apii" is not a component`)
}

func TestOriginNamesWhereAValueCameFrom(t *testing.T) {
	path := writeConfig(t, minimal+"server:\n  url: ws://127.0.0.1:7000\n")
	c, err := Load(path, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "server.url in "+path, c.Origin("server.url"))
	assert.Equal(t, "server.channel's default", c.Origin("server.channel"))

	t.Setenv("FOREMAN_SERVER_URL", "ws://127.0.0.1:7001")
	c, err = Load(path, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "FOREMAN_SERVER_URL", c.Origin("server.url"))

	flags := pflag.NewFlagSet("run", pflag.ContinueOnError)
	flags.String("url", "", "")
	require.NoError(t, flags.Parse([]string{"--url", "ws://127.0.0.1:7002"}))
	c, err = Load(path, flags, map[string]string{"url": "server.url"})
	require.NoError(t, err)
	assert.Equal(t, "--url", c.Origin("server.url"))
	assert.Equal(t, "ws://127.0.0.1:7002", c.Server.URL)
}

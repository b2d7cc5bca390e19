package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAgentsSection(t *testing.T) {
	c, err := Load(writeConfig(t, minimal+`agents:
  - name: ada
    role: builder
    command: [claude, -p, "work on the build"]
    env: {ANTHROPIC_MODEL: claude-sonnet, Mixed_Case: 1}
  - {name: aud, role: auditor, command: [foreman, agent, --role, auditor]}
`), nil, nil)
	require.NoError(t, err)
	require.Len(t, c.Agents, 2)
	assert.Equal(t, Agent{Name: "ada", Role: "builder", Command: []string{"claude", "-p", "work on the build"},
		Env: map[string]string{"ANTHROPIC_MODEL": "claude-sonnet", "Mixed_Case": "1"}}, c.Agents[0], "env names keep their case")
	assert.Equal(t, "auditor", c.Agents[1].Role)

	c, err = Load(writeConfig(t, minimal), nil, nil)
	require.NoError(t, err)
	assert.Empty(t, c.Agents)
}

func TestAgentsErrorsNameTheKey(t *testing.T) {
	for name, tc := range map[string]struct{ yaml, want string }{
		"twice": {"agents:\n  - {name: b1, role: builder, command: [x]}\n  - {name: b1, role: auditor, command: [y]}\n",
			`agents[1].name: "b1" is agents[0]'s name too; give each agent its own`},
		"no name":     {"agents:\n  - {role: builder, command: [x]}\n", "agents[0].name: missing"},
		"bad name":    {"agents:\n  - {name: a b, role: builder, command: [x]}\n", `agents[0].name: "a b" is not an agent's name`},
		"foreman":     {"agents:\n  - {name: foreman, role: builder, command: [x]}\n", `agents[0].name: "foreman" is not an agent's name`},
		"role":        {"agents:\n  - {name: b1, role: ci, command: [x]}\n", `agents[0].role: "ci" is not builder or auditor`},
		"no command":  {"agents:\n  - {name: b1, role: builder}\n", "agents[0].command: missing"},
		"string cmd":  {"agents:\n  - {name: b1, role: builder, command: claude -p}\n", "agents[0].command: is not a list of words"},
		"unknown key": {"agents:\n  - {name: b1, role: builder, command: [x], cmd: [y]}\n", "agents[0].cmd: unknown key (an agent has name, role, command and env)"},
		"env name":    {"agents:\n  - {name: b1, role: builder, command: [x], env: {A-B: 1}}\n", `agents[0].env: "A-B" is not an environment variable's name`},
		"not a list":  {"agents: 3\n", "agents: is not a list of agents"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(writeConfig(t, minimal+tc.yaml), nil, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}

package config

import (
	"fmt"
	"os"
	"regexp"
	"sort"

	goyaml "github.com/goccy/go-yaml"
	"github.com/spf13/viper"
)

// Agent is one agent foreman up starts and supervises (internal/agents):
// its name (its workspace's and key's), its role, the command that starts
// it, and what its environment adds.
type Agent struct {
	Name    string
	Role    string   // AgentBuilder or AgentAuditor
	Command []string // argv; argv[0] is looked up on PATH when foreman up starts
	Env     map[string]string
}

// EnvIdentity names an agent's key file in the environment foreman up
// starts it with; foreman agent and foreman mcp read it when --identity is
// not given.
const EnvIdentity = "FOREMAN_IDENTITY"

// The roles an agent of the agents: section plays.
const (
	AgentBuilder = "builder"
	AgentAuditor = "auditor"
)

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func agentsDefaults(d map[string]any) { d["agents"] = []any{} }

// decodeAgents reads agents: a list of {name, role, command, env}.
func decodeAgents(v *viper.Viper, c *Config, file string) error {
	raw := v.Get("agents")
	if file != "" && v.InConfig("agents") {
		// viper folds the keys of maps to lower case, and an agent's env
		// names are the program's, case and all: the file's own words.
		var doc struct {
			Agents any `yaml:"agents"`
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return errorf("agents", "%v", err)
		}
		if err := goyaml.Unmarshal(b, &doc); err != nil {
			return errorf("agents", "%v", err)
		}
		raw = doc.Agents
	}
	if raw == nil {
		return nil
	}
	list, ok := raw.([]any)
	if !ok {
		return errorf("agents", "is not a list of agents, each with name, role and command")
	}
	seen := map[string]int{}
	for i, item := range list {
		key := fmt.Sprintf("agents[%d]", i)
		m, ok := item.(map[string]any)
		if !ok {
			return errorf(key, "is not a mapping with name, role, command and env")
		}
		a, err := agent(key, m)
		if err != nil {
			return err
		}
		if j, dup := seen[a.Name]; dup {
			return errorf(key+".name", "%q is agents[%d]'s name too; give each agent its own (its workspace and key are named for it)", a.Name, j)
		}
		seen[a.Name] = i
		c.Agents = append(c.Agents, a)
	}
	return nil
}

func agent(key string, m map[string]any) (Agent, error) {
	var a Agent
	for _, k := range sortedKeys(m) {
		val := m[k]
		switch k {
		case "name":
			a.Name = fmt.Sprint(val)
		case "role":
			a.Role = fmt.Sprint(val)
		case "command":
			list, ok := val.([]any)
			if !ok {
				return a, errorf(key+".command", "is not a list of words (the program and its arguments: [claude, -p, ...])")
			}
			for _, w := range list {
				s, ok := w.(string)
				if !ok {
					return a, errorf(key+".command", "%v is not a word; quote it", w)
				}
				a.Command = append(a.Command, s)
			}
		case "env":
			env, ok := val.(map[string]any)
			if !ok {
				return a, errorf(key+".env", "is not a mapping of NAME: value")
			}
			a.Env = map[string]string{}
			for name, v := range env {
				if !envNameRE.MatchString(name) {
					return a, errorf(key+".env", "%q is not an environment variable's name", name)
				}
				a.Env[name] = fmt.Sprint(v)
			}
		default:
			return a, errorf(key+"."+k, "unknown key (an agent has name, role, command and env)")
		}
	}
	switch {
	case a.Name == "":
		return a, errorf(key+".name", "missing")
	case !nameRE.MatchString(a.Name) || a.Name == "foreman":
		return a, errorf(key+".name", "%q is not an agent's name: 1 to 32 letters, digits, _ or -, and not foreman", a.Name)
	case a.Role != AgentBuilder && a.Role != AgentAuditor:
		return a, errorf(key+".role", "%q is not builder or auditor", a.Role)
	case len(a.Command) == 0 || a.Command[0] == "":
		return a, errorf(key+".command", "missing: the program that starts the agent and its arguments ([foreman, agent, --role, builder] for a scripted one; docs/AGENTS.md has Claude Code's, Codex's and gemini-cli's)")
	}
	return a, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

package agents

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/agentforeman/foreman/internal/config"
)

// ScriptedMinute paces the scripted agents foreman up --agents starts: a
// contract minute of theirs lasts this long, so that a build of scripted
// agents takes seconds, while foreman keeps the contract's real minutes.
// Their builders say one PROGRESS (their work pushed) and then READY
// (ScriptedSteps): at this pace the room's rate limit (one message a
// second from each, server.rate_limit) and the host's landing set how
// long a component takes, not the agents' thinking.
const ScriptedMinute = 100 * time.Millisecond

// ScriptedSteps is a scripted builder's lines for a component, READY
// included (foreman agent --steps).
const ScriptedSteps = 2

// Scripted is what foreman up --agents n adds to the config's agents: n
// scripted builders (foreman agent --role builder) named b1..bn, and a
// scripted auditor, aud, unless the config has an auditor already (every
// READY waits for an AUDIT). Each finds its key, the room and the config
// in the environment foreman up starts it with.
func Scripted(program string, n int, have []config.Agent) ([]config.Agent, error) {
	if n <= 0 {
		return nil, nil
	}
	names := map[string]bool{}
	auditor := false
	for _, a := range have {
		names[a.Name] = true
		auditor = auditor || a.Role == config.AgentAuditor
	}
	var out []config.Agent
	add := func(name, role string, args ...string) error {
		if names[name] {
			return fmt.Errorf("--agents %d: the config's agents: has an agent named %s already, a name --agents gives a scripted one; rename yours", n, name)
		}
		out = append(out, config.Agent{Name: name, Role: role,
			Command: append([]string{program, "agent", "--role", role, "--name", name, "--minute", ScriptedMinute.String()}, args...)})
		return nil
	}
	for i := 1; i <= n; i++ {
		if err := add("b"+strconv.Itoa(i), config.AgentBuilder, "--seed", strconv.Itoa(i), "--steps", strconv.Itoa(ScriptedSteps)); err != nil {
			return nil, err
		}
	}
	if !auditor && !slices.ContainsFunc(out, func(a config.Agent) bool { return a.Role == config.AgentAuditor }) {
		if err := add("aud", config.AgentAuditor); err != nil {
			return nil, err
		}
	}
	return out, nil
}

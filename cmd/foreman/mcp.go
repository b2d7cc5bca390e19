package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/agents"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/mcpagent"
	"github.com/agentforeman/foreman/internal/paste"
	"github.com/agentforeman/foreman/internal/up"
	"github.com/agentforeman/foreman/internal/web"
)

// mcpFlags are foreman mcp's settings besides the config's.
type mcpFlags struct {
	identity, name, coordinator string
	answerWait, waitMax         time.Duration
	printConfig                 bool
	agents                      []string
}

// mcpFlagKeys are the flags that name configuration keys.
var mcpFlagKeys = map[string]string{
	"url":        "server.url",
	"channel":    "server.channel",
	"rate-limit": "server.rate_limit",
	"keepalive":  "mcp.keepalive",
}

func (a *app) mcpCommand() *cobra.Command {
	var f mcpFlags
	cmd := &cobra.Command{
		Use:   "mcp [CONFIG]",
		Short: "An MCP server on stdio that speaks the protocol for one LLM agent",
		Long: `mcp is an MCP server (Model Context Protocol, on stdin and stdout) for an LLM
agent's client (Claude Code, Claude Desktop, any MCP client) to start. It joins
the room as the agent, with the agent's key, and turns the protocol into tools
whose results are foreman's answers, read into their parts:

  claim(component)                     ACK, with what the last builder left, or REJECT and why
  progress(component, percent, note)   a check-in
  ready(component, ref)                REVIEW, or REJECT
  blocked(component, dep, note)        WAIT, UNBLOCKED or ESCALATE
  conflict(component, other, kind, details)
  abort(component, reason)
  audit(component, verdict, details)   MERGED, FIX or RETRY, for auditors
  status(component?)                   where it stands
  wait(timeout_seconds?)               blocks until something comes for the agent
                                       (TASKS, REVIEW, FIX, TIMEOUT, UNBLOCKED...)

While the agent works without calling a tool, mcp checks in for it (PROGRESS
with its last real percentage, saying it is automatic) before a check-in
interval would pass, for at most mcp.keepalive after its last tool call, so a
dead agent still times out. It paces its lines under the room's rate limit and
reconnects.

The room (server.url, server.channel, server.rate_limit) and the check-in
interval (rules.checkin_interval) are the config's, as foreman run reads them
(CONFIG, --config, FOREMAN_*, or foreman.yaml here); flags override them.
foreman is known by server.identity's sender id when that file is there,
else by --coordinator, else as the sender of foreman's stamped messages.
Logs go to stderr; stdout is the protocol.`,
		Example: `  foreman mcp --identity ~/.foreman/ada.json --url ws://127.0.0.1:6667
  # an MCP client's configuration, with absolute paths, to paste:
  foreman mcp --print-config --identity .foreman/ada.json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runMCP(cmd, configArg(args), &f) },
	}
	fl := cmd.Flags()
	fl.String("url", "", "AgentChat server URL (default: server.url)")
	fl.String("channel", "", "channel to join (default: server.channel)")
	fl.Duration("rate-limit", time.Second, "the room's rate limit (default: server.rate_limit)")
	fl.Duration("keepalive", 30*time.Minute, "automatic check-ins stop this long after the agent's last tool call; 0: none (default: mcp.keepalive)")
	fl.StringVar(&f.identity, "identity", "", "the agent's identity file (its key and sender id), created if missing (required; default: $FOREMAN_IDENTITY, which foreman up sets for the agents it starts)")
	fl.StringVar(&f.name, "name", "", "display name (default: the identity file's; a new file's name without .json)")
	fl.StringVar(&f.coordinator, "coordinator", "", "foreman's sender id (default: server.identity's, else learned from the room)")
	fl.DurationVar(&f.answerWait, "answer-wait", mcpagent.DefaultAnswerWait, "how long a tool waits for foreman's answer before it returns without one")
	fl.DurationVar(&f.waitMax, "wait-max", mcpagent.DefaultWaitMax, "the longest wait() blocks")
	fl.BoolVar(&f.printConfig, "print-config", false, "print an MCP client's configuration that starts this command, with absolute paths (--identity default: .foreman/agent.json beside the config), and exit")
	fl.StringSliceVar(&f.agents, "agents", nil, "with --print-config: one entry per agent named (foreman-NAME), each with its own key file .foreman/NAME.json beside the config, made on its first start")
	return cmd
}

// printMCPConfig prints what an MCP client's configuration needs to start
// foreman mcp as these flags and this config would: absolute paths
// throughout, since a client starts it from anywhere, often without
// ~/go/bin on PATH.
func (a *app) printMCPConfig(cmd *cobra.Command, c *config.Config, f *mcpFlags) error {
	if c.File == "" {
		return noConfigFile("mcp --print-config")
	}
	file := paste.Abs(c.File)
	url := ""
	if cmd.Flags().Changed("url") || os.Getenv("FOREMAN_SERVER_URL") != "" {
		url = c.Server.URL // not the file's: the client must be told
	}
	if len(f.agents) > 0 {
		if f.identity != "" {
			return errors.New("--agents and --identity: give one; each agent named gets its own key, .foreman/NAME.json")
		}
		var agents []paste.MCPEntry
		for _, name := range f.agents {
			if !nameRE.MatchString(name) || name == "foreman" {
				return fmt.Errorf("--agents: %q is not an agent's name: 1 to 32 letters, digits, _ or -, and not foreman", name)
			}
			agents = append(agents, paste.MCPEntry{Server: "foreman-" + name, Name: name,
				Key: filepath.Join(filepath.Dir(file), ".foreman", name+".json")})
		}
		if _, err := io.WriteString(a.stdout, paste.MCPConfig(paste.Program(), file, url, agents...)); err != nil {
			return err
		}
		for _, e := range agents {
			if err := a.printExporterEnv(c, e.Key, e.Name); err != nil {
				return err
			}
		}
		return nil
	}
	key := f.identity
	if key == "" {
		key = filepath.Join(filepath.Dir(file), ".foreman", "agent.json")
	}
	if _, err := io.WriteString(a.stdout, paste.MCPConfig(paste.Program(), file, url, paste.MCPEntry{Server: "foreman", Name: f.name, Key: paste.Abs(key)})); err != nil {
		return err
	}
	return a.printExporterEnv(c, paste.Abs(key), f.name)
}

// printExporterEnv prints, on stderr (stdout is the client's JSON), the
// environment the agent's own process needs to report its spend to
// foreman (docs/BUDGETS.md), when telemetry.secret and http.listen are
// set. The agent's key is made here if it is not yet: its sender id names
// it in the environment.
func (a *app) printExporterEnv(c *config.Config, key, name string) error {
	if c.Telemetry.Secret == "" || c.HTTP == "" {
		return nil
	}
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(key), ".json")
	}
	id, _, err := agentchat.LoadOrCreateIdentity(key, name)
	if err != nil {
		return fmt.Errorf("--identity: %w", err)
	}
	agent := id.AgentID()
	secret, err := web.TelemetrySecret(c)
	if err != nil {
		return err
	}
	env := agents.ExporterEnv("http://"+up.Dialable(c.HTTP), secret, agent)
	fmt.Fprintf(a.stderr, "# %s's spend: start its agent (Claude Code) with this environment (docs/BUDGETS.md)\n", agent)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(a.stderr, "export %s='%s'\n", k, v)
	}
	return nil
}

func (a *app) runMCP(cmd *cobra.Command, file string, f *mcpFlags) error {
	c, err := a.loadConfig(cmd, file, mcpFlagKeys)
	if err != nil {
		return err
	}
	if f.printConfig {
		return a.printMCPConfig(cmd, c, f)
	}
	if f.identity == "" {
		f.identity = os.Getenv(config.EnvIdentity) // foreman up's agents: their own key
	}
	if f.identity == "" {
		return errors.New("--identity FILE is required: the agent's key, whose sender id is how foreman knows it (created if missing; keep it for the whole build)")
	}
	if fl := cmd.Flags().Lookup("log-level"); fl == nil || !fl.Changed {
		c.Log.Level = "warn"
	}
	log, err := a.logger(c)
	if err != nil {
		return err
	}
	id, err := agentIdentity(f.identity, f.name, keyName(f.identity), true) // documented: created if missing
	if err != nil {
		return err
	}
	warnOpenIdentity(a.stderr, f.identity)
	room := agentchat.Config{URL: c.Server.URL, Channel: c.Server.Channel, Name: id.Name, Identity: id,
		RateLimit: c.Server.RateLimit, MaxMessage: c.Server.MaxMessage, FloodLimit: c.Server.FloodLimit,
		Logger: log.With().Str("part", "room").Logger()}
	// Two agents on one key would be one agent to foreman, each taking the
	// other's place in the room: the second is refused, as a second
	// foreman run with the same key is. (A room it cannot look into says
	// nothing: it joins.)
	look := cmd.Context()
	if look == nil {
		look = context.Background()
	}
	if in, err := agentchat.Present(look, room, id.AgentID(), 10*time.Second); err == nil && in {
		return fmt.Errorf("--identity %s: %s is in %s already: another program (an agent, or a second foreman mcp) joined with this key; give each agent its own (foreman mcp --print-config --agents NAME,NAME prints an entry, and a key, for each)",
			f.identity, id.AgentID(), c.Server.Channel)
	}
	coord := configCoordinator(c, f.coordinator)
	sess, err := mcpagent.New(mcpagent.Config{
		Room:            room,
		Coordinator:     coord,
		CheckinInterval: c.Rules.CheckinInterval,
		Keepalive:       c.MCP.Keepalive,
		AnswerWait:      f.answerWait,
		WaitMax:         f.waitMax,
		Hosts:           c.Roles.CI, // only the host's handoff lines are read
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "%s: agent id %s, joining %s at %s; MCP on stdio\n", id.Name, id.AgentID(), c.Server.Channel, c.Server.URL)

	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	roomErr := make(chan error, 1)
	go func() {
		err := sess.Run(ctx)
		cancel() // the room refused the agent for good: nothing to serve
		roomErr <- err
	}()
	info, _ := debug.ReadBuildInfo()
	srv := sess.Server(moduleVersion(version, info))
	serveErr := srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(cmd.InOrStdin()), Writer: nopWriteCloser{a.stdout}})
	cancel()
	if err := <-roomErr; err != nil {
		return err
	}
	if serveErr != nil && !errors.Is(serveErr, context.Canceled) && !errors.Is(serveErr, io.EOF) {
		return fmt.Errorf("MCP on stdio: %w", serveErr)
	}
	return nil
}

// keyName names a new key after its file (ada.json: ada), if that makes
// a display name; else "agent".
func keyName(path string) string {
	n := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	if validName.MatchString(n) {
		return n
	}
	return "agent"
}

var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

package up

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/agents"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/paste"
)

// printReady says where everything is and how to join, with absolute
// paths, to paste as it is.
func (u *Stack) printReady(ctx context.Context, w io.Writer) {
	c := u.c
	comps := len(c.Build.Components)
	vctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if v, err := u.bot.View(vctx); err == nil {
		comps = len(v.Components) // components ADDed before a restart count too
	}
	cancel()
	where := "served here"
	if !u.served {
		where = "joined"
	}
	fmt.Fprintf(w, "foreman up: build %s (%d components) in %s at %s (%s)\n", c.Build.Name, comps, c.Server.Channel, c.Server.URL, where)
	journal := "none (journal.path is \"\")"
	if c.Journal != "" {
		journal = paste.Abs(c.Journal)
	}
	fmt.Fprintf(w, "  foreman  %s, journal %s\n", u.bot.AgentID(), journal)
	if u.host != nil {
		checks := "none"
		if len(c.Host.CheckLines) > 0 {
			checks = strings.Join(c.Host.CheckLines, "; ")
		}
		fmt.Fprintf(w, "  host     %s, checking %s (target %s; checks: %s)\n", u.hostID, u.host.Repo.Dir(), c.Host.Target, checks)
		if u.hostKey {
			fmt.Fprintf(w, "           its key %s was created now\n", paste.Abs(c.Host.Identity))
		}
		if len(u.hostRoles) > 0 {
			fmt.Fprintf(w, "           its id is in %s for this run; list it there in %s to keep it for foreman run and foreman host\n",
				strings.Join(u.hostRoles, " and "), u.file)
		}
	}
	if u.team != nil {
		var names []string
		for _, a := range u.opts.Agents {
			names = append(names, a.Name+" ("+a.Role+")")
		}
		fmt.Fprintf(w, "  agents   %s, started now, each in its workspace under %s (its log: NAME/agent.log, and on the board)\n",
			strings.Join(names, ", "), agents.Root(c))
		if u.confined != "" {
			fmt.Fprintf(w, "           %s\n", u.confined)
		}
		if u.audRoles {
			fmt.Fprintf(w, "           the auditors' ids are in roles.auditors for this run\n")
		}
	}
	if u.board != nil {
		fmt.Fprintf(w, "  board    %s\n", u.boardURL)
	} else {
		fmt.Fprintln(w, "  board    off (http.listen is \"\")")
	}
	url := ""
	if c.Server.URL != u.origURL {
		url = c.Server.URL
		fmt.Fprintf(w, "Others find the room with: export FOREMAN_SERVER_URL=%s\n", url)
	}
	bin := u.opts.Program
	fmt.Fprintln(w)
	if key, name := operatorKey(c, u.file); key != "" {
		fmt.Fprintf(w, "You, the operator (%s), in the room:\n  %s\n", name, paste.Shell(paste.ChatCommand(bin, key, url, u.file)))
	} else {
		fmt.Fprintf(w, "The operator (roles.operators: %s) joins the room with its key file for KEY.json:\n  %s\n",
			strings.Join(c.Roles.Operators, ", "), paste.Shell(paste.ChatCommand(bin, "KEY.json", url, u.file)))
	}
	fmt.Fprintf(w, "\nAn LLM agent's MCP client (.mcp.json for Claude Code, claude_desktop_config.json for Claude Desktop)\n"+
		"starts foreman mcp so, one entry and one key per agent (foreman mcp --print-config --agents NAME,NAME,... prints\n"+
		"it for the agents you name; two agents on one key would be one agent to foreman):\n")
	fmt.Fprint(w, paste.MCPConfig(bin, u.file, url, paste.MCPEntry{Server: "foreman-agent1", Name: "agent1", Key: filepath.Join(filepath.Dir(u.file), ".foreman", "agent1.json")}))
	fmt.Fprintf(w, "and foreman prompt %s as its instructions.\n\nCtrl-C stops it all.\n", u.file)
	u.log.Info().Str("room", c.Server.URL).Str("board", u.boardURL).Msg("everything is up")
}

// operatorKey finds an operator's key file among those beside the config
// (.foreman/*.json, where foreman init puts them): its path and name.
func operatorKey(c *config.Config, file string) (path, name string) {
	keys, _ := filepath.Glob(filepath.Join(filepath.Dir(file), ".foreman", "*.json"))
	for _, k := range keys {
		if config.SamePath(k, c.Server.Identity) || config.SamePath(k, c.Host.Identity) {
			continue
		}
		id, err := agentchat.LoadIdentity(k)
		if err == nil && slices.Contains(c.Roles.Operators, id.AgentID()) {
			return k, id.Name
		}
	}
	return "", ""
}

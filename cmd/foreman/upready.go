package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/config"
)

// printReady says where everything is and how to join, with absolute
// paths, to paste as it is.
func (u *upStack) printReady(ctx context.Context, w io.Writer) {
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
		journal = absPath(c.Journal)
	}
	fmt.Fprintf(w, "  foreman  %s, journal %s\n", u.bot.AgentID(), journal)
	if u.host != nil {
		checks := "none"
		if len(c.Host.CheckLines) > 0 {
			checks = strings.Join(c.Host.CheckLines, "; ")
		}
		fmt.Fprintf(w, "  host     %s, checking %s (target %s; checks: %s)\n", u.hostID, u.host.Repo.Dir(), c.Host.Target, checks)
		if u.hostKey {
			fmt.Fprintf(w, "           its key %s was created now\n", absPath(c.Host.Identity))
		}
		if len(u.hostRoles) > 0 {
			fmt.Fprintf(w, "           its id is in %s for this run; list it there in %s to keep it for foreman run and foreman host\n",
				strings.Join(u.hostRoles, " and "), u.file)
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
	bin := selfPath()
	fmt.Fprintln(w)
	if key, name := operatorKey(c, u.file); key != "" {
		fmt.Fprintf(w, "You, the operator (%s), in the room:\n  %s\n", name, shellLine(chatCommand(bin, key, url, u.file)))
	} else {
		fmt.Fprintf(w, "The operator (roles.operators: %s) joins the room with its key file for KEY.json:\n  %s\n",
			strings.Join(c.Roles.Operators, ", "), shellLine(chatCommand(bin, "KEY.json", url, u.file)))
	}
	fmt.Fprintf(w, "\nAn LLM agent's MCP client (.mcp.json for Claude Code, claude_desktop_config.json for Claude Desktop)\n"+
		"starts foreman mcp so, one entry and one key per agent (foreman mcp --print-config --agents NAME,NAME,... prints\n"+
		"it for the agents you name; two agents on one key would be one agent to foreman):\n")
	fmt.Fprint(w, mcpConfig(bin, u.file, url, mcpEntry{server: "foreman-agent1", name: "agent1", key: filepath.Join(filepath.Dir(u.file), ".foreman", "agent1.json")}))
	fmt.Fprintf(w, "and foreman prompt %s as its instructions.\n\nCtrl-C stops it all.\n", u.file)
	u.log.Info().Str("room", c.Server.URL).Str("board", u.boardURL).Msg("everything is up")
}

// chatCommand is the command that puts the operator in the room.
func chatCommand(bin, key, url, config string) []string {
	args := []string{bin, "agent", "--role", "chat", "--identity", key}
	if url != "" {
		args = append(args, "--url", url)
	}
	return append(args, config)
}

// operatorKey finds an operator's key file among those beside the config
// (.foreman/*.json, where foreman init puts them): its path and name.
func operatorKey(c *config.Config, file string) (path, name string) {
	keys, _ := filepath.Glob(filepath.Join(filepath.Dir(file), ".foreman", "*.json"))
	for _, k := range keys {
		if samePath(k, c.Server.Identity) || samePath(k, c.Host.Identity) {
			continue
		}
		id, err := agentchat.LoadIdentity(k)
		if err == nil && slices.Contains(c.Roles.Operators, id.AgentID()) {
			return k, id.Name
		}
	}
	return "", ""
}

// selfPath is this program, to name in commands to paste: absolute, so
// that they work where foreman is not on PATH (an MCP client's
// environment often has no ~/go/bin). A program go run built in a
// temporary directory is named as foreman.
func selfPath() string {
	p, err := os.Executable()
	if err != nil || strings.Contains(p, string(filepath.Separator)+"go-build") {
		return "foreman"
	}
	return p
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// shellLine writes a command for a shell, quoting the words that need it.
func shellLine(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

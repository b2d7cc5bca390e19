package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/guide"
	"github.com/agentforeman/foreman/internal/paste"
)

func (a *app) promptCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "prompt [CONFIG]",
		Short: "Print the guide to give an agent (an LLM builder, auditor or CI bot)",
		Long: `prompt prints the guide for agent authors (docs/AGENTS.md): what to say in the
room, when, what each of foreman's replies means and how to recover from each,
with examples. Give it to an LLM agent as its instructions, or read it.

When a config is found (CONFIG, --config, FOREMAN_CONFIG or foreman.yaml
here), a last section says where this build's room is, who foreman is there,
the rules an agent must keep to, where to push (host.repo, its target branch
and checks, when foreman host runs), and the components: those the running
foreman has (read from its board at http.listen, so components ADDed in the
room are there), else the config's, saying so.`,
		Example: `  foreman prompt > AGENTS.md
  foreman prompt shop.yaml | my-agent --system-prompt-file -`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.loadConfig(cmd, configArg(args), nil)
			if err != nil {
				return err
			}
			if _, err := io.WriteString(a.stdout, guide.Text); err != nil {
				return err
			}
			if c.File != "" && len(c.Build.Components) > 0 {
				ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
				comps, from := liveComponents(ctx, c)
				cancel()
				writeThisBuild(a.stdout, c, comps, from)
			}
			return nil
		},
	}
}

// liveComponents asks the running foreman (its board's JSON, at
// http.listen) for the components the build has now, ADDed ones included;
// without an answer they are the config's. from says which, for the agent.
func liveComponents(ctx context.Context, c *config.Config) (comps []coordinator.Component, from string) {
	url, err := boardURL(c.HTTP)
	why := fmt.Sprint(err)
	if err == nil {
		why = "no running foreman answered at " + url
		if b, err := fetchBoard(ctx, url); err == nil && b.View != nil && !b.Stale {
			for _, v := range b.View.Components {
				comps = append(comps, coordinator.Component{Name: v.Name, Deps: v.Deps})
			}
			return comps, fmt.Sprintf("as the running foreman has them (its board, %s)", url)
		}
	}
	return c.Build.Components, fmt.Sprintf("from %s (%s, so components ADDed in the room are not listed; say STATUS there for the build as it stands)",
		filepath.Base(c.File), why)
}

// writeThisBuild says what an agent of this build needs besides the guide.
func writeThisBuild(w io.Writer, c *config.Config, comps []coordinator.Component, from string) {
	fmt.Fprintf(w, "\n## This build\n\n")
	fmt.Fprintf(w, "- The room: channel `%s` on `%s`.\n", c.Server.Channel, c.Server.URL)
	who := "`" + c.Server.Name + "`"
	if id, err := agentchat.LoadIdentity(c.Server.Identity); err == nil {
		who += ", sender id `" + id.AgentID() + "`"
	}
	fmt.Fprintf(w, "- foreman is %s. Only its lines are decisions.\n", who)
	room := fmt.Sprintf("--url %s --channel '%s'", c.Server.URL, c.Server.Channel)
	fmt.Fprintf(w, "- Connecting (see \"Connecting\"), with your key file for KEY.json:\n")
	fmt.Fprintf(w, "  - the stock MCP server: `AGENTCHAT_URL=%s agentchat-mcp`, then `agentchat_connect` with `channels: [\"%s\"]`;\n", c.Server.URL, c.Server.Channel)
	fmt.Fprintf(w, "  - foreman's MCP server: `foreman mcp --identity KEY.json %s`;\n", room)
	fmt.Fprintf(w, "  - a program: `foreman agent --json --identity KEY.json %s`.\n", room)
	r := c.Rules
	fmt.Fprintf(w, "- Check in at least every %s (TIMEOUT after %d missed); %d audit attempts per builder; audits due within %s; at most %d component(s) at a time; CI gating %s.\n",
		r.CheckinInterval, r.MissedCheckins, r.AuditAttempts, r.AuditTimeout, r.MaxClaimsPerAgent, map[bool]string{true: "on", false: "off"}[r.CIGating])
	if h := c.Host; h.Repo != "" {
		checks := "none: a branch that merges cleanly passes"
		if len(h.CheckLines) > 0 {
			checks = "`" + strings.Join(h.CheckLines, "`, `") + "`"
		}
		fmt.Fprintf(w, "- The work is real: foreman host checks each READY in the git repository `%s`. Push your branch there (`git push %s HEAD:refs/heads/<you>/<c>`), then say `READY <c> <you>/<c>`. It checks what would land on `%s` (checks: %s) and answers `CI <c> PASS`, `FAIL` (with the first failing line and the log) or `CONFLICT` (with the files); approved work lands on `%s`, then `MERGED <c>`.\n",
			paste.Abs(h.Repo), paste.Abs(h.Repo), h.Target, checks, h.Target)
	}
	writeOverlapRule(w, c)
	fmt.Fprintf(w, "- The build `%s`, its components in TASKS order, %s:\n", c.Build.Name, from)
	for _, comp := range comps {
		if len(comp.Deps) == 0 {
			fmt.Fprintf(w, "  - `%s`\n", comp.Name)
			continue
		}
		fmt.Fprintf(w, "  - `%s`, after %s\n", comp.Name, "`"+strings.Join(comp.Deps, "`, `")+"`")
	}
}

// writeOverlapRule says what the host's OVERLAP does in this build (see
// "Work in progress, overlaps and handoffs").
func writeOverlapRule(w io.Writer, c *config.Config) {
	does := "is a warning (`overlap: warn`): talk to the other builder, wait for it with CONFLICT files, or CONFLICT interface"
	if c.Rules.Overlap == coordinator.OverlapWait {
		does = "makes the builder whose branch moved last WAIT for the other (`overlap: wait`), as its CONFLICT files would"
	}
	fmt.Fprintf(w, "- Push your work in progress and name it in PROGRESS (`branch=`); the host's OVERLAP %s.\n", does)
}

package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/guide"
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
the components and the rules an agent must keep to.`,
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
				writeThisBuild(a.stdout, c)
			}
			return nil
		},
	}
}

// writeThisBuild says what an agent of this build needs besides the guide.
func writeThisBuild(w io.Writer, c *config.Config) {
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
	writeOverlapRule(w, c)
	fmt.Fprintf(w, "- The build `%s`, its components in TASKS order:\n", c.Build.Name)
	for _, comp := range c.Build.Components {
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

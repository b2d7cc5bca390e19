package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/internal/verify"
)

func (a *app) verifyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verify [CONFIG]",
		Short: "Check, commit by commit, that the target holds only what foreman host landed (landing receipts)",
		Long: `verify walks the first-parent history of host.target in host.repo, from its
tip down to where the host's first landing was made (host.ledger; --since
to say otherwise), and says of each commit:

  landed    foreman host landed it: a receipt (its note in
            refs/notes/foreman, an in-toto statement in a DSSE envelope)
            signed by a trusted key names it, it merges the commit the
            auditors approved onto the commit before it, and its tree
            passed every check the receipt names
  by-hand   no receipt: it was not landed by foreman (pushed straight to
            the target; the author is named)
  refused   a receipt that does not hold, and why: edited, signed by a key
            not trusted, about another commit or tree, landed on another
            commit, a tree that did not pass, an approval landed twice

A key is trusted only if it is the host's (the public key of
host.identity) or given with --trust: never the key a receipt carries.
After the host's key is rotated, give the old public key with --trust
(foreman identity --identity OLD --public > old.pub) and the receipts it
signed still verify.

Exit status 0 when every commit since then was landed by foreman with a
receipt that holds, 1 otherwise.`,
		Example: `  foreman verify                                   # host.repo, host.target, host.identity, host.ledger of foreman.yaml
  foreman verify --repo /srv/shop.git --trust host.pub --since v1.0
  foreman verify --json | jq '.commits[] | select(.verdict != "landed")'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.loadConfig(cmd, configArg(args), map[string]string{"repo": "host.repo", "target": "host.target"})
			if err != nil {
				return err
			}
			trust, _ := cmd.Flags().GetStringArray("trust")
			since, _ := cmd.Flags().GetString("since")
			o, err := verify.Configure(cmd.Context(), c, trust, since)
			if err != nil {
				return err
			}
			rep, err := verify.Run(cmd.Context(), o)
			if err != nil {
				return err
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else {
				fmt.Fprint(a.stdout, rep.Table())
			}
			if !rep.OK() {
				// The table said which commits and why.
				return &exitError{code: 1, silent: true, err: errors.New("the target holds commits foreman did not land")}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.String("repo", "", "the repository (default: host.repo)")
	fl.String("target", "", "the branch (default: host.target)")
	fl.StringArray("trust", nil, "a public key (PEM) or identity file whose receipts count, besides host.identity's; repeatable")
	fl.String("since", "", "the commit to stop at, not itself checked (default: the target before the host's first landing, from host.ledger)")
	fl.Bool("json", false, "the report as JSON")
	return cmd
}

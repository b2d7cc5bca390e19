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
tip down to where the host's chain of receipts began (its first landing's
receipt says, signed; --since to say otherwise), and says of each commit:

  landed    foreman host landed it: a receipt (its note in
            refs/notes/foreman, an in-toto statement in a DSSE envelope)
            signed by a trusted key names it and this repository
            (host.repository), it merges the commit the auditors approved
            onto the commit before it, its tree passed every check the
            receipt names, and it follows the landing before it in the
            chain of receipts
  by-hand   no receipt: it was not landed by foreman (pushed straight to
            the target; the author is named)
  refused   a receipt that does not hold, and why: edited, signed by a key
            not trusted, about another commit, tree or repository, landed
            on another commit, a tree that did not pass, an approval landed
            twice, a landing missing from the chain or out of its order

Then whether the target was rolled back (or frozen): its newest landing
must be the host's signed head's (refs/foreman/head/<target>, signed at
least hourly, no older than --max-age), and no older than the one verify
accepted before (--state FILE keeps it, as a TUF client keeps the last
timestamp). With neither a fresh signed head nor a state file, rollback
is not checked: verify says so and exits 1, unless --unanchored.

A key is trusted only if it is the host's (the public key of
host.identity) or given with --trust: never the key a receipt carries.
After the host's key is rotated, give the old public key with --trust
(foreman identity --identity OLD --public > old.pub) and the receipts it
signed still verify. verify reads nothing but the repository, the keys
and the state file: the same with or without cluster.nats.

Exit status 0 when every commit since then was landed by foreman with a
receipt that holds and the target was not rolled back, 1 otherwise.`,
		Example: `  foreman verify                                   # host.repo, host.target, host.repository, host.identity of foreman.yaml
  foreman verify --state ~/.local/state/foreman/shop.json
  foreman verify --repo /srv/shop.git --repository github.com/acme/shop --trust host.pub --since v1.0
  foreman verify --json | jq '.commits[] | select(.verdict != "landed")'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.loadConfig(cmd, configArg(args), map[string]string{"repo": "host.repo", "target": "host.target", "repository": "host.repository"})
			if err != nil {
				return err
			}
			trust, _ := cmd.Flags().GetStringArray("trust")
			since, _ := cmd.Flags().GetString("since")
			o, err := verify.Configure(cmd.Context(), c, trust, since)
			if err != nil {
				return err
			}
			o.State, _ = cmd.Flags().GetString("state")
			o.MaxAge, _ = cmd.Flags().GetDuration("max-age")
			o.Unanchored, _ = cmd.Flags().GetBool("unanchored")
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
				return &exitError{code: 1, silent: true, err: errors.New("the target holds commits foreman did not land, or was rolled back, or rollback was not checked")}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.String("repo", "", "the repository (default: host.repo)")
	fl.String("target", "", "the branch (default: host.target)")
	fl.StringArray("trust", nil, "a public key (PEM) or identity file whose receipts count, besides host.identity's; repeatable")
	fl.String("repository", "", "the repository's name the receipts must give (default: host.repository)")
	fl.String("since", "", "the commit to stop at, not itself checked (default: where the chain of receipts began, as its first landing's receipt says)")
	fl.String("state", "", "a file that keeps the newest landing verify accepted, to refuse a target rolled back below it (made on first use)")
	fl.Duration("max-age", verify.DefaultMaxAge, "the oldest the host's signed head may be and still anchor the newest landing")
	fl.Bool("unanchored", false, "accept a target whose newest landing neither --state nor a fresh signed head anchors (rollback not checked)")
	fl.Bool("json", false, "the report as JSON")
	return cmd
}

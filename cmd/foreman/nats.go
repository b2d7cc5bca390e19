package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/internal/natsauth"
)

func (a *app) natsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "nats",
		Short: "Make the NATS accounts and users a team's foreman runs on (operator mode, no nsc needed)",
		Long: `nats makes what docs/nats/foreman.conf includes: an operator, the account
FOREMAN with JetStream, and a scoped signing key per role (foreman, host,
worker, reader), so that each user has its role's permissions and nothing
else. Every worker is a user of its own: adding one is foreman nats creds,
never an edit of the server's configuration (docs/NATS.md).`,
	}
	cmd.AddCommand(a.natsInitCommand(), a.natsCredsCommand())
	return cmd
}

func (a *app) natsInitCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "init DIR",
		Short:   "Make the operator, the accounts and the roles' signing keys in DIR, and DIR/accounts.conf for the server",
		Example: "  foreman nats init /etc/nats/foreman   # beside /etc/nats/foreman.conf, which includes foreman/accounts.conf",
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			err := natsauth.Init(args[0])
			if errors.Is(err, natsauth.ErrExists) {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "made the accounts in %s: the server includes %s/accounts.conf; the signing keys' seeds are in %s/keys (keep them where you make users)\n",
				args[0], args[0], args[0])
			return nil
		},
	}
}

func (a *app) natsCredsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "creds DIR --role ROLE --name NAME",
		Short: "Make a user of the accounts in DIR and print its .creds file",
		Long: `creds makes a user for one foreman process: its JWT, signed by ROLE's
scoped key (so its permissions are ROLE's, filled in with its own name),
and its seed, as a .creds file (cluster.creds). NAME is the process's
cluster.id. A host is made for the builds it hosts (--builds). A worker is
made for its labels (worker.labels) and, unless
--unconfined, the label of workers that sandbox their checks; --trust adds
its public key to the file a host counts workers' results by
(host.workers).`,
		Example: `  foreman nats creds /etc/nats/foreman --role host --name h1 --builds shop -o h1.creds
  foreman nats creds /etc/nats/foreman --role worker --name w1 --labels gpu --trust /etc/foreman/workers -o w1.creds`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			role, _ := cmd.Flags().GetString("role")
			name, _ := cmd.Flags().GetString("name")
			labels, _ := cmd.Flags().GetStringSlice("labels")
			builds, _ := cmd.Flags().GetStringSlice("builds")
			unconfined, _ := cmd.Flags().GetBool("unconfined")
			trust, _ := cmd.Flags().GetString("trust")
			out, _ := cmd.Flags().GetString("output")
			if role != natsauth.RoleWorker && (len(labels) > 0 || unconfined || trust != "") {
				return fmt.Errorf("--labels, --unconfined and --trust are for --role worker")
			}
			if role != natsauth.RoleHost && len(builds) > 0 {
				return fmt.Errorf("--builds is for --role host")
			}
			creds, pub, err := natsauth.Creds(args[0], natsauth.User{Role: role, Name: name, Labels: labels, Confined: !unconfined, Builds: builds})
			if err != nil {
				return err
			}
			if trust != "" {
				if err := natsauth.AddTrusted(trust, name, pub); err != nil {
					return fmt.Errorf("--trust: %w", err)
				}
			}
			if out == "" {
				_, err = a.stdout.Write(creds)
				return err
			}
			if err := os.WriteFile(out, creds, 0o600); err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "%s: %s %s (%s)\n", out, role, name, strings.TrimSpace(pub))
			return nil
		},
	}
	cmd.Flags().String("role", "", "foreman, host, worker or reader")
	cmd.Flags().String("name", "", "the process's cluster.id (a worker's NATS user name)")
	cmd.Flags().StringSlice("labels", nil, "a worker's labels (worker.labels)")
	cmd.Flags().StringSlice("builds", nil, "the builds a host hosts (build.name): the only ledgers it may make or purge")
	cmd.Flags().Bool("unconfined", false, "a worker that runs checks unconfined (host.sandbox: off)")
	cmd.Flags().String("trust", "", "add a worker's public key to this file (host.workers)")
	cmd.Flags().StringP("output", "o", "", "write the .creds file here (mode 0600) rather than to standard output")
	_ = cmd.MarkFlagRequired("role")
	_ = cmd.MarkFlagRequired("name")
	return cmd
}

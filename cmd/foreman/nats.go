package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
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
never an edit of the server's configuration; revoking one is foreman nats revoke,
with no reload or restart (docs/NATS.md).`,
	}
	cmd.AddCommand(a.natsInitCommand(), a.natsCredsCommand(), a.natsRevokeCommand())
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
cluster.id. A host or a foreman is made for the builds it leads (--builds). A worker is
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
			if role != natsauth.RoleHost && role != natsauth.RoleForeman && len(builds) > 0 {
				return fmt.Errorf("--builds is for --role host or foreman")
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
	cmd.Flags().StringSlice("builds", nil, "the builds a host or a foreman leads (build.name): the only ledgers (a host's) or logs (foreman's) it may make or purge")
	cmd.Flags().Bool("unconfined", false, "a worker that runs checks unconfined (host.sandbox: off)")
	cmd.Flags().String("trust", "", "add a worker's public key to this file (host.workers)")
	cmd.Flags().StringP("output", "o", "", "write the .creds file here (mode 0600) rather than to standard output")
	_ = cmd.MarkFlagRequired("role")
	_ = cmd.MarkFlagRequired("name")
	return cmd
}

func (a *app) natsRevokeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "revoke DIR NAME --nats URL",
		Short: "Revoke every user made in DIR under NAME, on a running server, with no restart",
		Long: `revoke puts the keys of every user foreman nats creds made under NAME into
the account's revocations, signs the account's JWT again (DIR/account.jwt,
and DIR/accounts.conf, which a server started again preloads), and hands
it to the running server at --nats through NATS's own resolver, as the
system account's user nats init made (DIR/sys.creds). The server closes
the revoked user's connections at once and refuses it from then on; a
host reads the revocation and gives the jobs the worker held to others.`,
		Example: `  foreman nats revoke /etc/nats/foreman w1 --nats tls://nats.example.com:4222 \
      --tls-ca ca.pem --tls-cert admin.pem --tls-key admin-key.pem`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			url, _ := cmd.Flags().GetString("nats")
			ca, _ := cmd.Flags().GetString("tls-ca")
			cert, _ := cmd.Flags().GetString("tls-cert")
			key, _ := cmd.Flags().GetString("tls-key")
			if (cert == "") != (key == "") {
				return errors.New("--tls-cert and --tls-key: give both, a client certificate and its key")
			}
			accJWT, keys, err := natsauth.Revoke(args[0], args[1])
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "revoked %s (%s) in %s\n", args[1], strings.Join(keys, ", "), args[0])
			if url == "" {
				fmt.Fprintln(a.stdout, "not pushed (no --nats): a server takes it when it starts again; give --nats to take the user out now")
				return nil
			}
			opts := []nats.Option{nats.UserCredentials(natsauth.SystemCreds(args[0])), nats.Name("foreman nats revoke")}
			if ca != "" {
				opts = append(opts, nats.RootCAs(ca))
			}
			if cert != "" {
				opts = append(opts, nats.ClientCert(cert, key))
			}
			nc, err := nats.Connect(url, opts...)
			if err != nil {
				return fmt.Errorf("--nats: cannot reach NATS at %s as the system account's user (%s): %w", url, natsauth.SystemCreds(args[0]), err)
			}
			defer nc.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := natsauth.Push(ctx, nc, accJWT); err != nil {
				return fmt.Errorf("--nats: %w; the revocation is kept in %s, and a server started again takes it", err, args[0])
			}
			fmt.Fprintf(a.stdout, "the server at %s took it: %s's connections are closed, and it cannot sign in again\n", url, args[1])
			return nil
		},
	}
	cmd.Flags().String("nats", "", "the running server to hand the account's JWT to (its URL)")
	cmd.Flags().String("tls-ca", "", "the CA that signed the server's certificate")
	cmd.Flags().String("tls-cert", "", "a client certificate, for a server that asks for one")
	cmd.Flags().String("tls-key", "", "the client certificate's key")
	return cmd
}

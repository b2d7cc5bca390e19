package verify

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host/ledger"
	"github.com/agentforeman/foreman/internal/host/receipt"
)

// Configure makes the options `foreman verify` runs with from a
// configuration: host.repo and host.target (flags may have set them), the
// host's own public key (host.identity) and the keys in trust, and where
// the walk stops: since, else the target as it was before the first
// landing the host's ledger (host.ledger) records.
func Configure(ctx context.Context, c *config.Config, trust []string, since string) (Options, error) {
	if c.Host.Repo == "" {
		return Options{}, errors.New("host.repo: not set; give the repository with --repo")
	}
	repo, err := gitrepo.Open(ctx, c.Host.Repo)
	if err != nil {
		return Options{}, fmt.Errorf("host.repo: %w", err)
	}
	o := Options{Repo: repo, Target: c.Host.Target, Since: since}
	if o.Target == "" {
		o.Target = "main"
	}
	if c.Host.Identity != "" {
		switch k, err := receipt.LoadKey(c.Host.Identity); {
		case err == nil:
			o.Trusted = append(o.Trusted, k)
		case !errors.Is(err, fs.ErrNotExist) || len(trust) == 0:
			return Options{}, fmt.Errorf("host.identity: %w (give the host's public key with --trust instead)", err)
		}
	}
	for _, path := range trust {
		k, err := receipt.LoadKey(path)
		if err != nil {
			return Options{}, fmt.Errorf("--trust: %w", err)
		}
		o.Trusted = append(o.Trusted, k)
	}
	if o.Since != "" {
		return o, nil
	}
	if c.Cluster.Enabled() {
		return Options{}, errors.New("host.ledger: with cluster.nats the host's ledger is in JetStream, which verify does not read; give --since <the target's commit before the first landing>")
	}
	st, err := ledger.Read(c.Host.Ledger)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return Options{}, fmt.Errorf("host.ledger: %s does not exist: no landing to start from; give --since <commit>", c.Host.Ledger)
	case err != nil:
		return Options{}, fmt.Errorf("host.ledger: %w", err)
	case st.First == "":
		return Options{}, fmt.Errorf("host.ledger: %s records no landing yet; give --since <commit> to check the target anyway", c.Host.Ledger)
	}
	o.Since = st.First
	return o, nil
}

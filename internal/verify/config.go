package verify

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host/receipt"
)

// Configure makes the options `foreman verify` runs with from a
// configuration: host.repo, host.target and host.repository (flags may
// have set them), the host's own public key (host.identity) and the keys
// in trust. Nothing else: where the walk stops is the chain's own signed
// start (or since), never the host's ledger, so the same configuration
// verifies with or without cluster.nats.
func Configure(ctx context.Context, c *config.Config, trust []string, since string) (Options, error) {
	if c.Host.Repo == "" {
		return Options{}, errors.New("host.repo: not set; give the repository with --repo")
	}
	repo, err := gitrepo.Open(ctx, c.Host.Repo)
	if err != nil {
		return Options{}, fmt.Errorf("host.repo: %w", err)
	}
	o := Options{Repo: repo, Target: c.Host.Target, Since: since, Repository: c.RepositoryName()}
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
	return o, nil
}

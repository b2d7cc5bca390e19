package live

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/nats-io/nkeys"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host/checks"
	"github.com/agentforeman/foreman/internal/host/sandbox"
)

// SandboxConfig is the sandbox a configuration asks for (sandbox.Configured).
func SandboxConfig(c *config.Config, gitDir string) sandbox.Config {
	return sandbox.Configured(c, gitDir)
}

// Sandbox makes the checks' sandbox, or says it is off (nil, no error),
// with what the host should say at start about it.
func Sandbox(c *config.Config, gitDir string) (*sandbox.Sandbox, []string, error) {
	if c.Host.Unconfined {
		return nil, []string{"host.sandbox is off: checks run the builders' code unconfined, as this user, with everything it may reach (the host's key, the configuration, HOME, the network, the room); set host.sandbox: on"}, nil
	}
	sc := SandboxConfig(c, gitDir)
	s, err := sandbox.New(sc)
	if err != nil {
		return nil, nil, fmt.Errorf("host.sandbox: %w", err)
	}
	var warnings []string
	if !c.Cluster.Enabled() {
		if w := s.DiskRoom(c.Host.Work, c.Host.MaxParallel); w != "" {
			warnings = append(warnings, w)
		}
	}
	if sc.Net == sandbox.NetAll {
		warnings = append(warnings, "host.sandbox_net is all: checks reach the host's network, the room and every service on this machine included")
	}
	return s, warnings, nil
}

// secrets are what no check's log or verdict may show: the host's key, in
// every form, the values host.env hands the checks, and how the host signs
// in to NATS (a check never gets them, but one may be named in host.env).
func secrets(c *config.Config) []checks.Secret {
	var out []checks.Secret
	for _, form := range agentchat.SecretForms(c.Host.Identity) {
		out = append(out, checks.Secret{Name: "the host's key", Value: form})
	}
	for _, s := range []checks.Secret{{Name: config.EnvNATSPassword, Value: c.Cluster.Auth.Password}, {Name: config.EnvNATSToken, Value: c.Cluster.Auth.Token}} {
		if s.Value != "" {
			out = append(out, s)
		}
	}
	if c.Cluster.Creds != "" {
		if data, err := os.ReadFile(c.Cluster.Creds); err == nil {
			if kp, err := nkeys.ParseDecoratedNKey(data); err == nil {
				if seed, err := kp.Seed(); err == nil {
					out = append(out, checks.Secret{Name: "cluster.creds", Value: string(seed)})
				}
			}
		}
	}
	for _, e := range c.Host.Env {
		name, value, set := strings.Cut(e, "=")
		if !set {
			value = os.Getenv(name)
		}
		if value != "" {
			out = append(out, checks.Secret{Name: "host.env " + name, Value: value})
		}
	}
	return out
}

// mayLand reads the configuration again before each landing and holds it
// back when the host's id is no longer in roles.merger (or roles.ci): a
// SIGHUP makes foreman read the roles again, and a landing foreman would
// then refuse to call MERGED would leave the target and the board apart.
// Always on: a role the caller gave the host in memory, beyond what the
// file said at start (foreman up gives the host its roles so), is given
// again to what the file says now, as the caller's own reload gives it to
// foreman; with no file, the roles cannot change, and the check is of the
// roles it was given.
func mayLand(c *config.Config, self string) func() error {
	if c.File == "" {
		return func() error { return rolesErr(c, self) }
	}
	file := c.File
	var given coordinator.Roles
	if start, err := config.Load(file, nil, nil); err == nil {
		if slices.Contains(c.Roles.CI, self) && !slices.Contains(start.Roles.CI, self) {
			given.CI = []string{self}
		}
		if slices.Contains(c.Roles.Merger, self) && !slices.Contains(start.Roles.Merger, self) {
			given.Merger = []string{self}
		}
	}
	return func() error {
		now, err := config.Load(file, nil, nil)
		if err != nil {
			return fmt.Errorf("cannot read %s again to check the roles before landing: %v", file, err)
		}
		now.Roles.CI = append(now.Roles.CI, given.CI...)
		now.Roles.Merger = append(now.Roles.Merger, given.Merger...)
		if err := rolesErr(now, self); err != nil {
			return fmt.Errorf("%s has changed: %v", file, err)
		}
		return nil
	}
}

func rolesErr(c *config.Config, self string) error {
	_, err := Roles(c, self)
	return err
}

// CheckSandbox is foreman host --check-sandbox: what this machine
// enforces on checks with this configuration, a line each; an error when
// it cannot sandbox them.
func CheckSandbox(ctx context.Context, c *config.Config, out io.Writer) error {
	gitDir := ""
	if c.Host.Repo != "" {
		if repo, err := gitrepo.Open(ctx, c.Host.Repo); err == nil {
			gitDir = repo.GitDir()
		}
	}
	s, err := sandbox.New(SandboxConfig(c, gitDir))
	if err != nil {
		return fmt.Errorf("host.sandbox: %w", err)
	}
	defer s.Close()
	if c.Host.Unconfined {
		fmt.Fprintln(out, "host.sandbox: off: checks run unconfined; with it on, this machine would enforce:")
	} else {
		fmt.Fprintln(out, "host.sandbox: on: each check command runs confined:")
	}
	for _, l := range s.Describe() {
		fmt.Fprintln(out, "  "+l)
	}
	fmt.Fprintln(out, "  digest: "+s.Digest()+" (each landing's receipt records it)")
	return nil
}

package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/viper"

	"github.com/agentforeman/foreman/internal/checkspec"
	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/protocol"
)

// Host configures foreman host: the CI and merge queue over a git
// repository (host.* keys).
type Host struct {
	Repo string // the repository checked and landed in; "" until set
	// Repository is the repository's name as the landing receipts give it
	// (host.repository), which foreman verify expects: build.name when not
	// set. Two repositories whose hosts share a key (a fork) must differ.
	Repository string
	Target     string     // the branch things land on
	Checks     [][]string // each a program and its arguments, split from what was written
	CheckLines []string   // the checks as written
	// CheckLabels are, per check, the labels a worker must have to run it
	// (sorted; nil: any worker), from the map form {run: ..., labels:
	// [...]}. Only a host with workers (cluster.nats) reads them.
	CheckLabels [][]string
	AutoRebase  bool
	MaxParallel int
	// Batch is host.batch.max: the approved components one check of the
	// train vouches for at most, landed together when it passes (1: each
	// is checked on its own).
	Batch int
	// BatchMin and BatchWait are host.batch.min and host.batch.wait: fewer
	// than BatchMin cars (or READYs checked together) wait up to BatchWait
	// for more before one run checks them (1: none waits).
	BatchMin  int
	BatchWait time.Duration
	// FailureDepth is host.failure_depth: how many cars behind a failed
	// one are still checked (their chains hold it) before it is blamed; one
	// that passes lands it with them.
	FailureDepth int
	Logs         string // directory of the check logs and the queue view (queue.json)
	Ledger       string // the host's journal
	Work         string // the host's private worktrees
	Identity     string // the host's key file
	Name         string // its display name
	Coordinator  string // foreman's sender id; "": the id of server.identity's key
	Env          []string
	LogLimit     int64  // bytes kept of one check's log
	LogURL       string // where the board serves the logs; "": from http.listen
	Retries      int    // a failed check is run again this many times on the same tree before anyone is blamed
	// FlakyThreshold: a check command whose failures passed again on the
	// same tree more than this share of the time is flaky, and its
	// failure is checked again before anyone is blamed (0: never).
	FlakyThreshold float64
	// OverlapInterval is how often, at most, one component's work in
	// progress is merged with the others' (contract section 10).
	OverlapInterval time.Duration
	Prune           bool // delete a builder's branch once it landed
	// BranchNamespaces: a builder's branches are under its own name, and
	// a READY naming another is refused (foreman up sets it for the agents
	// it starts, which push only there through its push gate).
	BranchNamespaces bool
	// LandAs is how an approved component lands (host.land_as): LandMerge,
	// a merge commit, or LandSquash, one commit; either is one entry on
	// the target's first-parent line.
	LandAs string
	// With workers (cluster.nats): where the host serves its repository
	// to them, read-only (git's smart HTTP), and the URL they fetch from
	// ("": http:// and the address it listens on).
	Serve    string
	ServeURL string
	// Workers is the file of the workers whose results count, each by
	// its id and public key (host.workers; workq.Trust); "": any
	// worker's, unsigned.
	Workers string

	// The checks' sandbox (package sandbox); the zero value is on, with
	// the defaults.
	Unconfined    bool             // host.sandbox: off
	SandboxNet    string           // host.sandbox_net: none ("") or all
	SandboxMemory string           // host.sandbox_memory: cgroup or watcher
	SandboxRO     []string         // host.sandbox_paths.ro: absolute, ~ expanded
	SandboxRW     []string         // host.sandbox_paths.rw
	SandboxLimits checkspec.Limits // host.sandbox_limits.*
}

// host.land_as's values.
const (
	LandMerge  = "merge"
	LandSquash = "squash"
)

// MaxParallel bounds host.max_parallel: each job is a worktree and
// processes on the host's machine.
const MaxParallel = 64

func hostDefaults(d map[string]any) {
	d["host.repo"] = ""
	d["host.repository"] = ""
	d["host.target"] = "main"
	d["host.checks"] = []string{}
	d["host.auto_rebase"] = true
	d["host.max_parallel"] = 1
	d["host.batch.max"] = 1
	d["host.batch.min"] = 1
	d["host.batch.wait"] = "1m"
	d["host.failure_depth"] = 0
	d["host.logs"] = ".foreman/host/logs"
	d["host.ledger"] = ".foreman/host/ledger.jsonl"
	d["host.work"] = ".foreman/host/work"
	d["host.identity"] = ".foreman/host.json"
	d["host.name"] = "host"
	d["host.coordinator"] = ""
	d["host.env"] = []string{}
	d["host.log_limit"] = 8 << 20
	d["host.log_url"] = ""
	d["host.retries"] = 1
	d["host.flaky_threshold"] = 0.25
	d["host.overlap_interval"] = "30s"
	d["host.prune"] = false
	d["host.branch_namespaces"] = false
	d["host.land_as"] = LandMerge
	d["host.serve"] = "127.0.0.1:0"
	d["host.serve_url"] = ""
	d["host.workers"] = ""
	d["host.sandbox"] = "on"
	d["host.sandbox_net"] = checkspec.NetNone
	d["host.sandbox_memory"] = checkspec.MemoryCgroup
	d["host.sandbox_paths.ro"] = []string{}
	d["host.sandbox_paths.rw"] = []string{}
	d["host.sandbox_limits.memory"] = checkspec.Size(checkspec.DefaultMemory)
	d["host.sandbox_limits.processes"] = checkspec.DefaultTasks
	d["host.sandbox_limits.file_size"] = checkspec.Size(checkspec.DefaultFileSize)
	d["host.sandbox_limits.disk"] = checkspec.Size(checkspec.DefaultDisk)
	d["host.sandbox_limits.caches"] = checkspec.Size(checkspec.DefaultCaches)
}

func decodeHost(v *viper.Viper, c *Config, src sources) error {
	h := Host{
		Repo:        src.path("host.repo", strings.TrimSpace(v.GetString("host.repo"))),
		Repository:  strings.TrimSpace(v.GetString("host.repository")),
		Target:      strings.TrimSpace(v.GetString("host.target")),
		Logs:        src.path("host.logs", v.GetString("host.logs")),
		Ledger:      src.path("host.ledger", v.GetString("host.ledger")),
		Work:        src.path("host.work", v.GetString("host.work")),
		Identity:    src.path("host.identity", v.GetString("host.identity")),
		Name:        v.GetString("host.name"),
		Coordinator: strings.TrimSpace(v.GetString("host.coordinator")),
		LogURL:      strings.TrimSuffix(strings.TrimSpace(v.GetString("host.log_url")), "/"),
	}
	t, err := gitrepo.ParseRef(h.Target)
	if err != nil || t.Branch == "" {
		why := "a commit id"
		if err != nil {
			why = err.Error()
		}
		return errorf("host.target", "%q is not a branch name: %s", h.Target, why)
	}
	h.Target = t.String()
	if h.Repository == "" {
		h.Repository = c.Build.Name
	}
	if len(h.Repository) > 200 || strings.ContainsFunc(h.Repository, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return errorf("host.repository", "%q is not a name: one word of at most 200 bytes, such as github.com/acme/shop", h.Repository)
	}
	if h.AutoRebase, err = boolean(v, "host.auto_rebase"); err != nil {
		return err
	}
	if h.MaxParallel, err = count(v, "host.max_parallel", 1); err != nil {
		return err
	}
	if err := atMost(h.MaxParallel, MaxParallel, "host.max_parallel"); err != nil {
		return err
	}
	if h.Batch, err = count(v, "host.batch.max", 1); err != nil {
		return err
	}
	if err := atMost(h.Batch, 64, "host.batch.max"); err != nil {
		return err
	}
	if h.BatchMin, err = count(v, "host.batch.min", 1); err != nil {
		return err
	}
	if err := atMost(h.BatchMin, h.Batch, "host.batch.min"); err != nil {
		return err
	}
	if h.BatchWait, err = duration(v, "host.batch.wait", false); err != nil {
		return err
	}
	if err := atMost(h.BatchWait, time.Hour, "host.batch.wait"); err != nil {
		return err
	}
	if h.FailureDepth, err = count(v, "host.failure_depth", 0); err != nil {
		return err
	}
	if err := atMost(h.FailureDepth, 16, "host.failure_depth"); err != nil {
		return err
	}
	if h.FailureDepth > 0 && h.Batch == 1 {
		return errorf("host.failure_depth", "%d needs host.batch.max above 1: a car behind a failed one that passes lands it with itself, as a batch; set host.batch.max, or failure_depth 0", h.FailureDepth)
	}
	limit, err := count(v, "host.log_limit", 1024)
	if err != nil {
		return err
	}
	h.LogLimit = int64(limit)
	if h.Retries, err = count(v, "host.retries", 0); err != nil {
		return err
	}
	if err := atMost(h.Retries, 5, "host.retries"); err != nil {
		return err
	}
	if h.FlakyThreshold, err = share(v, "host.flaky_threshold"); err != nil {
		return err
	}
	if h.Prune, err = boolean(v, "host.prune"); err != nil {
		return err
	}
	if h.BranchNamespaces, err = boolean(v, "host.branch_namespaces"); err != nil {
		return err
	}
	switch h.LandAs = strings.ToLower(strings.TrimSpace(v.GetString("host.land_as"))); h.LandAs {
	case LandMerge, LandSquash:
	default:
		return errorf("host.land_as", "%q is not merge (a merge commit of the approved commit, its first parent the target) or squash (one commit of the same tree on the target)", h.LandAs)
	}
	if h.OverlapInterval, err = duration(v, "host.overlap_interval", true); err != nil {
		return err
	}
	if err := atMost(h.OverlapInterval, 24*time.Hour, "host.overlap_interval"); err != nil {
		return err
	}
	if err := decodeChecks(v, &h); err != nil {
		return err
	}
	for i, e := range v.GetStringSlice("host.env") {
		if err := checkspec.CheckEnvEntry(e); err != nil {
			return errorf(fmt.Sprintf("host.env[%d]", i), "%v", err)
		}
		h.Env = append(h.Env, e)
	}
	if !nameRE.MatchString(h.Name) {
		return errorf("host.name", "%q is not a display name: 1 to 32 letters, digits, _ or -", h.Name)
	}
	if h.Coordinator != "" && !protocol.ValidAgent(h.Coordinator) {
		return errorf("host.coordinator", "%q is not a sender id like @0123456789abcdef", h.Coordinator)
	}
	if h.LogURL != "" && !strings.HasPrefix(h.LogURL, "http://") && !strings.HasPrefix(h.LogURL, "https://") {
		return errorf("host.log_url", "%q is not an http:// or https:// URL", h.LogURL)
	}
	if err := decodeSandbox(v, &h, src); err != nil {
		return err
	}
	h.Serve = strings.TrimSpace(v.GetString("host.serve"))
	if _, _, err := net.SplitHostPort(h.Serve); err != nil {
		return errorf("host.serve", "%q is not an address like 127.0.0.1:7070 (port 0 takes a free one)", h.Serve)
	}
	h.ServeURL = strings.TrimSuffix(strings.TrimSpace(v.GetString("host.serve_url")), "/")
	if w := strings.TrimSpace(v.GetString("host.workers")); w != "" {
		h.Workers = src.path("host.workers", w)
		if _, err := os.Stat(h.Workers); err != nil {
			return errorf("host.workers", "%s cannot be read: %v (foreman nats creds --role worker --trust FILE writes it)", h.Workers, errors.Unwrap(err))
		}
	}
	if h.ServeURL != "" && !strings.HasPrefix(h.ServeURL, "http://") && !strings.HasPrefix(h.ServeURL, "https://") {
		return errorf("host.serve_url", "%q is not an http:// or https:// URL", h.ServeURL)
	}
	c.Host = h
	return nil
}

// decodeSandbox reads host.sandbox*: on or off, the network, the paths
// checks may read or write (~ is the host user's HOME; a relative path is
// read as the other paths are), the limits.
func decodeSandbox(v *viper.Viper, h *Host, src sources) error {
	on, err := boolean(v, "host.sandbox")
	if err != nil {
		return err
	}
	h.Unconfined = !on
	switch h.SandboxNet = strings.ToLower(strings.TrimSpace(v.GetString("host.sandbox_net"))); h.SandboxNet {
	case checkspec.NetNone, checkspec.NetAll:
	default:
		return errorf("host.sandbox_net", "%q is not none (a network of the check's own: its loopback, nothing else) or all (the host's network, unconfined)", h.SandboxNet)
	}
	switch h.SandboxMemory = strings.ToLower(strings.TrimSpace(v.GetString("host.sandbox_memory"))); h.SandboxMemory {
	case checkspec.MemoryCgroup, checkspec.MemoryWatcher:
	default:
		return errorf("host.sandbox_memory", "%q is not cgroup (the kernel counts each check's memory, in a cgroup of its own) or watcher (the host polls its processes: weaker)", h.SandboxMemory)
	}
	for _, list := range []struct {
		key string
		to  *[]string
	}{{"host.sandbox_paths.ro", &h.SandboxRO}, {"host.sandbox_paths.rw", &h.SandboxRW}} {
		for i, p := range v.GetStringSlice(list.key) {
			key := fmt.Sprintf("%s[%d]", list.key, i)
			p = strings.TrimSpace(p)
			switch {
			case p == "":
				return errorf(key, "empty")
			case p == "~" || strings.HasPrefix(p, "~/"):
				home, err := os.UserHomeDir()
				if err != nil {
					return errorf(key, "%s: no HOME to expand ~ in (%v)", p, err)
				}
				p = filepath.Join(home, p[1:])
			case strings.HasPrefix(p, "~"):
				return errorf(key, "%s: only ~ (the host user's HOME) is expanded, not ~user", p)
			default:
				p = src.path(list.key, p)
			}
			abs, err := filepath.Abs(p)
			if err != nil {
				return errorf(key, "%v", err)
			}
			*list.to = append(*list.to, abs)
		}
	}
	for _, l := range []struct {
		key   string
		to    *int64
		least int64
	}{{"host.sandbox_limits.memory", &h.SandboxLimits.Memory, 1 << 20}, {"host.sandbox_limits.file_size", &h.SandboxLimits.FileSize, 1 << 20},
		{"host.sandbox_limits.disk", &h.SandboxLimits.Disk, checkspec.MinDisk}, {"host.sandbox_limits.caches", &h.SandboxLimits.Caches, checkspec.MinDisk}} {
		n, err := checkspec.ParseSize(v.GetString(l.key))
		if err != nil {
			return errorf(l.key, "%v", err)
		}
		if n < l.least {
			return errorf(l.key, "%s is below the least allowed, %s", checkspec.Size(n), checkspec.Size(l.least))
		}
		*l.to = n
	}
	if h.SandboxLimits.Tasks, err = count(v, "host.sandbox_limits.processes", 16); err != nil {
		return err
	}
	return nil
}

// boolean reads an on/off key as the rules do: on, off, true, false.
func boolean(v *viper.Viper, key string) (bool, error) {
	s := strings.ToLower(strings.TrimSpace(v.GetString(key)))
	switch s {
	case "on", "true", "yes", "1":
		return true, nil
	case "off", "false", "no", "0":
		return false, nil
	}
	if b, err := strconv.ParseBool(s); err == nil {
		return b, nil
	}
	return false, errorf(key, "%q is not on or off", s)
}

// RepositoryName is the repository's name in the landing receipts:
// host.repository, else build.name (a configuration made in code, not
// read, may leave it unset).
func (c *Config) RepositoryName() string {
	if c.Host.Repository != "" {
		return c.Host.Repository
	}
	return c.Build.Name
}

// RequireHost refuses a configuration foreman host cannot work with: no
// repository, or rules that give it nothing to do.
func (c *Config) RequireHost() error {
	if c.Host.Repo == "" {
		return errorf("host.repo", "not set: the path of the git repository foreman host checks and lands in; set it, or run foreman init in the repository, which offers it")
	}
	if !c.Rules.CIGating && c.Rules.Merge != "external" {
		return errorf("rules.ci_gating", "off, and rules.merge is accept: foreman host would have nothing to do (turn ci_gating on for checks, merge external for landings)")
	}
	return nil
}

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/tooling/sim"
)

// upDemo is foreman demo --up (make demo-real): the README's path on a
// temporary git repository. foreman init in it, then foreman up itself
// (the command, in this process, with its stock room: one message a
// second per sender), then scripted builders that push to the repository
// and an auditor; the operator (olga) watches from the chat client. It
// ends when the build is COMPLETE and the target holds every component,
// and says how long that took.
type upDemo struct {
	a       *app
	minute  time.Duration
	http    string
	dir     string // kept with --dir; else removed
	quiet   bool
	color   bool
	limit   time.Duration
	workers int
}

var roomURLRE = regexp.MustCompile(`(?m)^foreman up: build \S+ \(\d+ components\) in \S+ at (\S+) `)

func (d *upDemo) run(ctx context.Context) error {
	out := d.a.stdout
	dir := d.dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "foreman-demo-up-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// git init, a first commit on main, foreman init: the README's steps.
	shop := filepath.Join(dir, "shop")
	if _, err := gitrepo.Init(ctx, shop, "main", false); err != nil {
		return fmt.Errorf("cannot make the demo's repository (is git 2.38 or later installed?): %w", err)
	}
	config := filepath.Join(shop, defaultConfig)
	initOut := &strings.Builder{}
	quietApp := &app{stdout: initOut, stderr: io.Discard}
	if err := quietApp.initConfig(config, initFlags{name: "olga", url: "ws://127.0.0.1:6667", channel: "#build"}); err != nil {
		return fmt.Errorf("foreman init: %w", err)
	}
	fmt.Fprintf(out, "$ git init %s && foreman init --name olga   (host.repo: the repository itself, target main)\n", shop)
	fmt.Fprintf(out, "$ foreman up --listen 127.0.0.1:0 --http %s\n", d.http)

	// foreman up, as the command: its own output and logs kept apart.
	upOut, upErr := &lockedBuffer{}, &lockedBuffer{}
	upApp := &app{stdout: upOut, stderr: upErr}
	root := upApp.rootCommand()
	root.SetArgs([]string{"up", config, "--listen", "127.0.0.1:0", "--http", d.http, "--log-level", "warn"})
	root.SetOut(upOut)
	root.SetErr(upErr)
	upCtx, stopUp := context.WithCancel(context.WithoutCancel(ctx))
	defer stopUp()
	upDone := make(chan error, 1)
	began := time.Now()
	go func() { upDone <- root.ExecuteContext(upCtx) }()
	var ready string
	for ready == "" {
		select {
		case err := <-upDone:
			return fmt.Errorf("foreman up stopped: %v\n%s", err, upErr)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
			if s := upOut.String(); strings.Contains(s, "Ctrl-C stops it all.") {
				ready = s
			}
		}
	}
	if !d.quiet {
		fmt.Fprint(out, indent(ready))
	}
	m := roomURLRE.FindStringSubmatch(ready)
	if m == nil {
		return fmt.Errorf("foreman up said no room:\n%s", ready)
	}
	url := m[1]
	c, err := loadDemoConfig(config)
	if err != nil {
		return err
	}
	c.Server.URL = url

	// The cast: the operator watching, builders pushing to the repository,
	// an auditor.
	var wg sync.WaitGroup
	castCtx, stopCast := context.WithCancel(ctx)
	defer func() { stopCast(); wg.Wait() }()
	shown := &lockedBuffer{}
	var show io.Writer = shown
	if !d.quiet {
		show = io.MultiWriter(shown, out)
		fmt.Fprintf(out, "\n$ foreman agent --role chat --identity .foreman/olga.json   (the operator, watching)\n")
		for i := 1; i <= d.workers; i++ {
			fmt.Fprintf(out, "$ foreman agent --role builder --name b%d --minute %s --repo .\n", i, d.minute)
		}
		fmt.Fprintf(out, "$ foreman agent --role auditor --name aud --minute %s\n\n", d.minute)
	}
	if err := d.watch(castCtx, &wg, c, shop, show); err != nil {
		return err
	}
	for i := 1; i <= d.workers; i++ {
		name := fmt.Sprintf("b%d", i)
		pusher, err := sim.NewPusher(shop, c.Host.Target, name, c.Roles.CI)
		if err != nil {
			return err
		}
		s := sim.DefaultBuilder()
		pusher.Hooks(&s)
		p, err := sim.NewBuilder(d.simConfig(c, name, uint64(i)), s)
		if err != nil {
			return err
		}
		d.goRun(castCtx, &wg, p)
	}
	aud, err := sim.NewAuditor(d.simConfig(c, "aud", 99), sim.Auditor{})
	if err != nil {
		return err
	}
	d.goRun(castCtx, &wg, aud)

	deadline := time.After(d.limit)
	for !strings.Contains(shown.String(), "COMPLETE "+c.Build.Name) {
		select {
		case err := <-upDone:
			return fmt.Errorf("foreman up stopped before the build was complete: %v\n%s", err, upErr)
		case <-deadline:
			return fmt.Errorf("the build was not complete after %s", d.limit)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	took := time.Since(began)
	stopCast()
	wg.Wait()

	missing, graph, err := d.landed(shop, c)
	if err != nil {
		return err
	}
	stopUp()
	if err := <-upDone; err != nil {
		return fmt.Errorf("foreman up: %w\n%s", err, upErr)
	}
	fmt.Fprintf(out, "\n$ git log --oneline --graph main\n%s", graph)
	if len(missing) > 0 {
		return fmt.Errorf("COMPLETE, but main lacks %s", strings.Join(missing, ", "))
	}
	fmt.Fprintf(out, "%s complete in %.1fs from foreman up to COMPLETE: main holds all %d components; foreman up stopped cleanly\n",
		c.Build.Name, took.Seconds(), len(c.Build.Components))
	if d.dir != "" {
		fmt.Fprintf(out, "kept in %s\n", shop)
	}
	return nil
}

func (d *upDemo) simConfig(c *config.Config, name string, seed uint64) sim.Config {
	return sim.Config{URL: c.Server.URL, Channel: c.Server.Channel, Name: name, Minute: d.minute,
		RateLimit: c.Server.RateLimit, Seed: seed, Logger: zerolog.Nop()}
}

func (d *upDemo) goRun(ctx context.Context, wg *sync.WaitGroup, p *sim.Participant) {
	wg.Add(1)
	go func() { defer wg.Done(); _ = p.Run(ctx) }()
}

// watch is the operator in the chat client, reading the room: what the
// demo shows.
func (d *upDemo) watch(ctx context.Context, wg *sync.WaitGroup, c *config.Config, shop string, w io.Writer) error {
	id, err := agentchat.LoadIdentity(filepath.Join(shop, ".foreman", "olga.json"))
	if err != nil {
		return err
	}
	show := newRoomShow(w, d.color, "")
	show.Self, show.Role = id.AgentID(), "chat"
	show.Names[id.AgentID()] = id.Name
	show.SetRoles(c.Roles, rolesSource(c))
	stdin, typing := io.Pipe()
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = chat(ctx, stdin, io.Discard, agentchat.Config{URL: c.Server.URL, Channel: c.Server.Channel, Name: id.Name, Identity: id,
			RateLimit: c.Server.RateLimit, Logger: zerolog.Nop()}, show, func() {})
	}()
	context.AfterFunc(ctx, func() { typing.Close() })
	return nil
}

// landed checks that the target holds every component's work, and draws
// its history.
func (d *upDemo) landed(shop string, c *config.Config) (missing []string, graph string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	repo, err := gitrepo.Open(ctx, shop)
	if err != nil {
		return nil, "", err
	}
	files, err := repo.Git(ctx, "ls-tree", "-r", "--name-only", c.Host.Target)
	if err != nil {
		return nil, "", err
	}
	have := strings.Fields(files)
	for _, comp := range c.Build.Components {
		if !slices.Contains(have, comp.Name+"/"+comp.Name+".txt") {
			missing = append(missing, comp.Name)
		}
	}
	graph, err = repo.Git(ctx, "log", "--oneline", "--graph", c.Host.Target)
	return missing, graph, err
}

func loadDemoConfig(path string) (*config.Config, error) {
	c, err := config.Load(path, nil, nil)
	if err != nil {
		return nil, err
	}
	if c.Host.Repo == "" {
		return nil, errors.New("foreman init did not offer the repository as host.repo")
	}
	return c, nil
}

// indent sets foreman up's own output off from the room's.
func indent(s string) string {
	var b strings.Builder
	for l := range strings.SplitSeq(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("  | " + l + "\n")
	}
	return b.String()
}

// lockedBuffer is written by one goroutine while another reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

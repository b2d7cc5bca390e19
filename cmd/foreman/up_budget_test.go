package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/agents"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/web"
)

// spendOnEnv names, in the environment of an agent foreman up starts,
// the component the test binary, as that agent, claims and spends on.
const spendOnEnv = "SPEND_ON"

// spender is an agent as foreman up starts it, spending as Claude Code
// does: it joins the room with the key and at the address up gives it,
// CLAIMs component, and once ACKed reports $0.50 of claude_code.cost.usage
// with the Go SDK's OTLP/HTTP exporter configured by nothing but the
// environment up gave it (endpoint, token, foreman.agent attribute,
// interval); then it stays alive until it is stopped. It says its pid in
// its log.
func spender(component string) int {
	// Never outlive a test that died without stopping its foreman up: its
	// parent gone (it is another's child then), or, whatever happened,
	// well past the test's own waits (several of upWait) and go test's
	// -timeout, so that a slow run is never cut short by it.
	parent := os.Getppid()
	go func() {
		for range time.Tick(time.Second) {
			if os.Getppid() != parent {
				fmt.Fprintln(os.Stderr, "spender: its foreman up is gone; exiting")
				os.Exit(3)
			}
		}
	}()
	time.AfterFunc(30*time.Minute, func() { fmt.Fprintln(os.Stderr, "spender: never stopped; exiting"); os.Exit(3) })
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "spender:", err); return 1 }
	id, err := agentchat.LoadIdentity(os.Getenv(config.EnvIdentity))
	if err != nil {
		return fail(err)
	}
	fmt.Printf("spender: pid %d, %s, claiming %s\n", os.Getpid(), id.AgentID(), component)
	ctx := context.Background()
	room := agentchat.New(agentchat.Config{URL: os.Getenv("FOREMAN_SERVER_URL"), Channel: "#build", Identity: id,
		RateLimit: 5 * time.Millisecond, Logger: zerolog.Nop()})
	go func() { os.Exit(fail(fmt.Errorf("the room: %v", room.Run(ctx)))) }()
	ack := "ACK " + component + " " + id.AgentID()
	acked := make(chan struct{})
	go func() {
		heard := false
		for e := range room.Events() {
			switch e := e.(type) {
			case agentchat.Joined:
				room.Send(agentchat.Line{Text: "CLAIM " + component})
			case agentchat.Message:
				for _, l := range strings.Split(e.Body(), "\n") {
					if !e.Replay && !heard && strings.HasPrefix(l, ack) {
						heard = true
						close(acked)
					}
				}
			}
		}
	}()
	<-acked

	exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false}))
	if err != nil {
		return fail(err)
	}
	res, err := resource.New(ctx, resource.WithFromEnv())
	if err != nil {
		return fail(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
	cost, err := mp.Meter("com.anthropic.claude_code").Float64Counter("claude_code.cost.usage", metric.WithUnit("USD"))
	if err != nil {
		return fail(err)
	}
	cost.Add(ctx, 0.50, metric.WithAttributes(attribute.String("session.id", strconv.Itoa(os.Getpid())), attribute.String("model", "claude-sonnet")))
	// At once rather than at the interval, to keep the test short; a
	// refused export is sent again (the sum is cumulative).
	for {
		err := mp.ForceFlush(ctx)
		if err == nil {
			break
		}
		fmt.Fprintln(os.Stderr, "spender: export:", err)
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("spender: spent $0.50 on %s\n", component)
	select {}
}

// A budget hold stops the process of an agent foreman up started, with
// real parts: foreman up (the CLI, in this process) serving the room, the
// board and the OTLP receiver; two agents it starts as processes (this
// test binary, spender), each claiming a component in the room and
// reporting its spend over OTLP/HTTP as up's environment says. b1's spend
// passes db's budget: foreman says ESCALATE db budget, and the supervisor
// stops b1's process (SIGTERM; the pid is gone) and holds it. An
// operator's BUDGET that holds b2 (api) too makes the supervisor check
// every hold again: b1 stays held, never started again. The operator's
// BUDGET db +1 lifts db's hold: b1 is started again (a new pid, one
// restart), its new process spends again, and b2 stays held.
func TestABudgetHoldStopsTheAgentsProcess(t *testing.T) {
	w := newUpWorld(t)
	self, err := os.Executable()
	require.NoError(t, err)
	config := writeFile(t, w.dir, "budget.yaml", fmt.Sprintf(`server:
  url: ws://127.0.0.1:0
  rate_limit: 5ms
build:
  name: shop
  components:
    - name: db
    - name: api
roles:
  operators: [%q]
journal:
  path: journal
http:
  listen: "127.0.0.1:0"
host:
  sandbox: off
telemetry:
  secret: %s/.foreman/otlp.secret
budgets:
  components:
    - {name: db, budget: "0.10"}
agents:
  - name: b1
    role: builder
    command: [%q]
    env: {%s: db}
  - name: b2
    role: builder
    command: [%q]
    env: {%s: api}
`, w.operator.AgentID(), w.dir, self, spendOnEnv, self, spendOnEnv))
	stdout, stderr, done, stop := startUp(t, config)
	out := stdout.String()
	room := regexp.MustCompile(`(?m)^foreman up: build shop \(2 components\) in #build at (ws://127\.0\.0\.1:\d+) \(served here\)$`).FindStringSubmatch(out)
	require.NotNil(t, room, out)
	boardURL := regexp.MustCompile(`(?m)^  board    (http://127\.0\.0\.1:\d+/)$`).FindStringSubmatch(out)
	require.NotNil(t, boardURL, out)
	op := peerAs(t, room[1], w.operator)

	var b web.Board
	agent := func(name string) agents.Status {
		for _, a := range b.Agents {
			if a.Name == name {
				return a
			}
		}
		t.Fatalf("no agent %s on the board", name)
		return agents.Status{}
	}
	component := func(name string) coordinator.ComponentView {
		for _, c := range b.View.Components {
			if c.Name == name {
				return c
			}
		}
		t.Fatalf("no component %s on the board", name)
		return coordinator.ComponentView{}
	}
	// until reads the board, as foreman status does, until ok holds.
	until := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(upWait)
		for {
			b = readBoard(t, boardURL[1])
			if b.View != nil && ok() {
				return
			}
			select {
			case code := <-done:
				t.Fatalf("foreman up ended (%d) before %s:\n%s", code, what, stderr)
			case <-time.After(20 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("never %s; the agents' logs:\n%s\n%s\nforeman up:\n%s", what, agentLog(b, "b1"), agentLog(b, "b2"), stderr)
			}
		}
	}

	// b2 spends on api (no budget), b1 on db (its budget $0.10).
	until("b2 spent on api", func() bool { return component("api").Spent.USD == 500_000 })
	escalation := op.await("ESCALATE db budget ")
	b1 := agent("b1")
	assert.Contains(t, escalation, "ESCALATE db budget db spent $0.50 of $0.10 (500%)")
	assert.Contains(t, escalation, "held, "+b1.ID+" is to stop")
	until("b1's process stopped and held", func() bool {
		a := agent("b1")
		require.Zero(t, a.Restarts, "b1 was started again while held: %+v", a)
		return a.State == agents.Held && a.Pid == 0
	})
	b1 = agent("b1")
	assert.Equal(t, "signal: terminated", b1.LastExit, "the supervisor's SIGTERM stopped it")
	assert.Contains(t, b1.Reason, "db is held by its budget (ESCALATE db budget)")
	pids := spenderPids(t, b1.Log)
	require.Len(t, pids, 1, "b1 started once")
	assert.ErrorIs(t, syscall.Kill(pids[0], 0), syscall.ESRCH, "b1's process (pid %d) is gone", pids[0])
	assert.Equal(t, agents.Running, agent("b2").State)

	// A further BUDGET: api's, below its spend, holds b2 at once; the
	// supervisor checks every agent's hold again, and b1 stays held.
	op.say("BUDGET api 0.10")
	op.await("ESCALATE api budget ")
	until("b2's process stopped and held", func() bool { return agent("b2").State == agents.Held && agent("b2").Pid == 0 })
	held := agent("b1")
	assert.Equal(t, agents.Held, held.State, "b1 is still held after the supervisor checked the holds again")
	assert.Zero(t, held.Restarts, "and was not started again")
	assert.Len(t, spenderPids(t, b1.Log), 1, "b1 started once")

	// BUDGET db +1 lifts db's hold: b1 is started again, and spends again.
	op.say("BUDGET db +1")
	op.await("ACK db " + b1.ID + " budget set by " + w.operator.AgentID() + ": go on")
	until("b1 started again", func() bool { a := agent("b1"); return a.State == agents.Running && a.Pid != 0 })
	b1 = agent("b1")
	assert.Equal(t, 1, b1.Restarts)
	assert.NotEqual(t, pids[0], b1.Pid, "a new process")
	until("b1's new process spent on db", func() bool { return component("db").Spent.USD == 1_000_000 })
	pids = spenderPids(t, b1.Log)
	assert.Equal(t, []int{pids[0], b1.Pid}, pids, "b1's log says its second process is the one running")
	assert.NoError(t, syscall.Kill(b1.Pid, 0), "b1's new process is alive")
	assert.Equal(t, "building", component("db").State, "db's budget ($1.10) is above its spend")
	assert.Equal(t, agents.Held, agent("b2").State, "api's hold is not lifted")

	stop()
	require.Equal(t, 0, <-done, stderr.String())
	assert.ErrorIs(t, syscall.Kill(b1.Pid, 0), syscall.ESRCH, "foreman up stopped b1")
	for _, name := range []string{"b1", "b2"} {
		assert.NotContains(t, agentLog(b, name), "DATA RACE", "the agents are built with -race too")
	}
}

// readBoard reads foreman up's /api/view as foreman status does.
func readBoard(t *testing.T, url string) web.Board {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := fetchBoard(ctx, url)
	require.NoError(t, err)
	return *b
}

// spenderPids are the pids an agent's log says its spender processes had,
// in order.
func spenderPids(t *testing.T, log string) []int {
	t.Helper()
	text, err := os.ReadFile(log)
	require.NoError(t, err)
	var out []int
	for _, m := range regexp.MustCompile(`(?m)^spender: pid (\d+),`).FindAllStringSubmatch(string(text), -1) {
		pid, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		out = append(out, pid)
	}
	return out
}

func agentLog(b web.Board, name string) string {
	for _, a := range b.Agents {
		if a.Name == name {
			text, err := os.ReadFile(a.Log)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return err.Error()
			}
			return name + ":\n" + string(text)
		}
	}
	return ""
}

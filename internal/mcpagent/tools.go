package mcpagent

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentforeman/foreman/protocol"
)

// Instructions is what an MCP client is told about the server: the tools
// in the order of a component's life. The whole guide is `foreman prompt`.
const Instructions = `foreman coordinates agents building one piece of software in a chat room.
These tools speak its protocol for you: each returns foreman's answer, read
into its parts. A builder: wait() for TASKS, claim() one component (when it
returns a handoff, start from that commit, not from nothing), then push your
work in progress to a branch often and progress() at least once per check-in
interval with an honest percentage and that branch, and ready() with the PR
or branch when done; on FIX, fix the findings, progress() and ready() again;
after MERGED, claim the next. blocked() and conflict() push back, abort()
gives a component up (a reason starting with a hard blocker type such as
invalid_specification asks a human). The host's OVERLAP c d (wait() returns
it) means your work and d's would conflict: talk to d's builder, or say
conflict() with kind files to wait for it. An auditor answers each REVIEW
with audit(). status() shows where a component stands. While you work
without calling a tool, this server checks in for you with your last real
percentage, for a bounded time (mcp.keepalive): call progress() when your
progress changes. The full guide: foreman prompt.`

// Inputs of the tools.
type (
	componentIn struct {
		Component string `json:"component" jsonschema:"the component, exactly as TASKS names it"`
	}
	progressIn struct {
		Component string `json:"component" jsonschema:"the component you own"`
		Percent   int    `json:"percent" jsonschema:"how far you are, 0 to 100, honestly"`
		Branch    string `json:"branch,omitempty" jsonschema:"the branch (or full commit id) where you pushed your work in progress, so that it is not lost if you stop and the host can warn of overlaps"`
		Note      string `json:"note,omitempty" jsonschema:"a few words on what you did"`
	}
	readyIn struct {
		Component string `json:"component" jsonschema:"the component you own"`
		Ref       string `json:"ref" jsonschema:"the PR URL or branch with the work"`
	}
	blockedIn struct {
		Component string `json:"component" jsonschema:"the component you own"`
		Dep       string `json:"dep" jsonschema:"the component you need first, by its exact name"`
		Note      string `json:"note,omitempty" jsonschema:"what you need from it"`
	}
	conflictIn struct {
		Component string `json:"component" jsonschema:"the component you own"`
		Other     string `json:"other" jsonschema:"the component your work collides with"`
		Kind      string `json:"kind" jsonschema:"files (the same files: you wait for the other to merge) or interface (you disagree on an interface: a human decides)"`
		Details   string `json:"details,omitempty" jsonschema:"what collides"`
	}
	abortIn struct {
		Component string `json:"component" jsonschema:"the component you own"`
		Reason    string `json:"reason" jsonschema:"why; start with a hard blocker type (mathematically_false missing_dependency unresolvable_build_error invalid_specification resource_exhausted strategy_failed) to ask a human, else e.g. context_exhaustion_handoff at 60%"`
	}
	auditIn struct {
		Component string `json:"component" jsonschema:"the component in review"`
		Verdict   string `json:"verdict" jsonschema:"PASS or FAIL"`
		Details   string `json:"details,omitempty" jsonschema:"FAIL: findings specific enough to fix; they go to the builder word for word"`
	}
	statusIn struct {
		Component string `json:"component,omitempty" jsonschema:"one component; empty for the whole board"`
	}
	waitIn struct {
		TimeoutSeconds float64 `json:"timeout_seconds,omitempty" jsonschema:"how long to wait at most (default and most: the server's --wait-max)"`
	}
)

// WaitResult is what wait() returns.
type WaitResult struct {
	Events   []Event   `json:"events" jsonschema:"what came for you, oldest first: foreman's lines read into their parts, lines that mention you, and this server's notes"`
	TimedOut bool      `json:"timed_out" jsonschema:"nothing came within the timeout"`
	Holding  []Holding `json:"holding" jsonschema:"the components you own as foreman's replies tell"`
}

// StatusResult is what status() returns.
type StatusResult struct {
	Answer
	Holding []Holding `json:"holding" jsonschema:"the components you own as foreman's replies tell"`
}

// InboxURI is the resource of what waits for the agent: what wait() would
// return now. A client subscribed to it (resources/subscribe) is told
// (notifications/resources/updated) as soon as something comes for the
// agent while it is not in wait(), so that it need not poll; wait()
// itself returns the moment something comes (docs/DESIGN.md, "Waking an
// agent").
const InboxURI = "foreman://inbox"

// Server makes the MCP server whose tools speak for the session's agent.
// It tells subscribed clients of news until the session ends.
func (s *Session) Server(version string) *mcp.Server {
	known := func(uri string) error {
		if uri != InboxURI {
			return fmt.Errorf("%s: no such resource; the one to subscribe to is %s", uri, InboxURI)
		}
		return nil
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "foreman", Title: "foreman agent tools", Version: version},
		&mcp.ServerOptions{Instructions: Instructions,
			SubscribeHandler:   func(_ context.Context, r *mcp.SubscribeRequest) error { return known(r.Params.URI) },
			UnsubscribeHandler: func(_ context.Context, r *mcp.UnsubscribeRequest) error { return known(r.Params.URI) },
		})
	srv.AddResource(&mcp.Resource{URI: InboxURI, Name: "inbox", Title: "what came for you",
		Description: "What wait() would return now (TASKS, REVIEW, FIX, UNBLOCKED, MERGED of what you hold, lines that mention you...), left for it. Subscribe to be told when something comes; call wait() to take it.",
		MIMEType:    "application/json"},
		func(ctx context.Context, _ *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			evs := s.Pending(ctx)
			if evs == nil {
				evs = []Event{}
			}
			b, err := json.Marshal(map[string]any{"events": evs})
			if err != nil {
				return nil, err
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: InboxURI, MIMEType: "application/json", Text: string(b)}}}, nil
		})
	go func() {
		for {
			select {
			case <-s.news:
				_ = srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: InboxURI})
			case <-s.over:
				return
			}
		}
	}()
	tool := func(name, desc string) *mcp.Tool { return &mcp.Tool{Name: name, Description: desc} }
	mcp.AddTool(srv, tool("claim", "Claim a component TASKS offered. Returns ACK (it is yours; the context says what the last builder left) or REJECT with the reason. When the last builder left work on a branch, handoff gives the branch and, once the host has pinned it, the ref and commit to start from."),
		func(ctx context.Context, _ *mcp.CallToolRequest, in componentIn) (*mcp.CallToolResult, Answer, error) {
			a, err := s.claim(ctx, in.Component)
			return nil, a, err
		})
	mcp.AddTool(srv, tool("progress", "Check in on a component you own with an honest percentage, and the branch you pushed your work in progress to (push often, and name it: if you stop, the next builder starts from it). Say it at least once per check-in interval; any line about the component counts."),
		sayTool(s, func(in progressIn) (matcher, []string, error) {
			if in.Percent < 0 || in.Percent > 100 {
				return matcher{}, nil, fmt.Errorf("percent %d: give 0 to 100", in.Percent)
			}
			branch := strings.TrimSpace(in.Branch)
			if branch != "" {
				if _, err := protocol.CheckRef(branch); err != nil {
					return matcher{}, nil, fmt.Errorf("branch: %w", err)
				}
				branch = protocol.BranchKey + branch
			}
			return matcher{kind: askProgress, c: in.Component, pct: in.Percent, branch: strings.TrimPrefix(branch, protocol.BranchKey)},
				[]string{join("PROGRESS", in.Component, strconv.Itoa(in.Percent), branch, text(in.Note)), "STATUS " + in.Component}, nil
		}))
	mcp.AddTool(srv, tool("ready", "Say a component you own is done, with its PR or branch. Returns REVIEW (it waits for an audit) or REJECT."),
		sayTool(s, func(in readyIn) (matcher, []string, error) {
			return matcher{kind: askReady, c: in.Component}, []string{join("READY", in.Component, in.Ref), "STATUS " + in.Component}, nil
		}))
	mcp.AddTool(srv, tool("blocked", "Say a component you own cannot go on until another component exists. Returns WAIT (go on at UNBLOCKED, checking in meanwhile), UNBLOCKED (it exists already) or ESCALATE (a human must decide)."),
		sayTool(s, func(in blockedIn) (matcher, []string, error) {
			return matcher{kind: askBlocked, c: in.Component}, []string{join("BLOCKED", in.Component, in.Dep, text(in.Note))}, nil
		}))
	mcp.AddTool(srv, tool("conflict", "Say your work on a component you own collides with another component: kind files (you wait for it) or interface (a human decides)."),
		sayTool(s, func(in conflictIn) (matcher, []string, error) {
			return matcher{kind: askBlocked, c: in.Component}, []string{join("CONFLICT", in.Component, in.Other, strings.ToLower(in.Kind), text(in.Details))}, nil
		}))
	mcp.AddTool(srv, tool("abort", "Give up a component you own. A reason starting with a hard blocker type holds it for a human (ESCALATE); any other puts it back in TASKS."),
		sayTool(s, func(in abortIn) (matcher, []string, error) {
			return matcher{kind: askAbort, c: in.Component}, []string{join("ABORT", in.Component, text(in.Reason)), "STATUS " + in.Component}, nil
		}))
	mcp.AddTool(srv, tool("audit", "Answer a REVIEW: PASS, or FAIL with findings. Returns what follows (MERGED, FIX, RETRY) or REJECT."),
		sayTool(s, func(in auditIn) (matcher, []string, error) {
			return matcher{kind: askAudit, c: in.Component}, []string{join("AUDIT", in.Component, strings.ToUpper(in.Verdict), text(in.Details)), "STATUS " + in.Component}, nil
		}))
	mcp.AddTool(srv, tool("status", "Where a component stands (owner, progress, what fires next and when), or the whole board."),
		func(ctx context.Context, _ *mcp.CallToolRequest, in statusIn) (*mcp.CallToolResult, StatusResult, error) {
			m, line := matcher{kind: askBoard}, "STATUS"
			if in.Component != "" {
				m, line = matcher{kind: askStatus, c: in.Component}, "STATUS "+in.Component
			}
			m.self = s.self
			a, err := s.say(ctx, m, line)
			return nil, StatusResult{Answer: a, Holding: orEmpty(s.Holdings(ctx))}, err
		})
	mcp.AddTool(srv, tool("wait", "Wait until something comes for you (TASKS, REVIEW, ACK, FIX, RETRY, TIMEOUT, WAIT, UNBLOCKED, ESCALATE or MERGED about what you hold, lines that mention you), and return it all. Bounded: an empty list means nothing came."),
		func(ctx context.Context, _ *mcp.CallToolRequest, in waitIn) (*mcp.CallToolResult, WaitResult, error) {
			s.Begin(ctx)
			evs, err := s.Wait(ctx, time.Duration(in.TimeoutSeconds*float64(time.Second)))
			s.End(context.Background())
			if evs == nil {
				evs = []Event{}
			}
			return nil, WaitResult{Events: evs, TimedOut: len(evs) == 0, Holding: orEmpty(s.Holdings(ctx))}, err
		})
	return srv
}

// claim says CLAIM c and returns foreman's answer. When the ACK names the
// branch the last builder left (contract section 10), it also waits a
// little for the host's handoff line, which gives the pinned ref and
// commit to start from.
func (s *Session) claim(ctx context.Context, c string) (Answer, error) {
	a, err := s.say(ctx, matcher{kind: askClaim, c: c, self: s.self}, "CLAIM "+c)
	if err != nil || !a.Accepted || a.Handoff == nil {
		return a, err
	}
	if h := s.awaitHandoff(ctx, c, s.cfg.HandoffWait); h != nil {
		a.Handoff.Ref, a.Handoff.Commit, a.Handoff.From = h.Ref, h.Commit, h.From
		a.Note += fmt.Sprintf("; the host pinned it as %s (%s): fetch that ref and branch from the commit", h.Ref, h.Commit)
	} else {
		a.Note += "; no host pinned it (yet): wait() returns its handoff line if one comes"
	}
	return a, nil
}

// tool makes the handler of a tool that says lines and returns foreman's
// answer.
func sayTool[In any](s *Session, lines func(In) (matcher, []string, error)) mcp.ToolHandlerFor[In, Answer] {
	return func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Answer, error) {
		m, said, err := lines(in)
		if err != nil {
			return nil, Answer{}, err
		}
		m.self = s.self
		a, err := s.say(ctx, m, said...)
		return nil, a, err
	}
}

// join makes a line of words, leaving out empty ones.
func join(words ...string) string {
	var out []string
	for _, w := range words {
		if w = strings.TrimSpace(w); w != "" {
			out = append(out, w)
		}
	}
	return strings.Join(out, " ")
}

// text cleans free text to one bounded line.
func text(s string) string { return protocol.CleanText(s, protocol.MaxText) }

func orEmpty(h []Holding) []Holding {
	if h == nil {
		return []Holding{}
	}
	return h
}

package demo

import (
	"time"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/tooling/sim"
)

// The build is the bookshop of config.example.yaml and examples/bookshop.
const buildName = "bookshop"

// Bookshop is the demo's build, which `foreman init` starts users with too.
func Bookshop() []coordinator.Component {
	return []coordinator.Component{
		{Name: "db"},
		{Name: "auth", Deps: []string{"db"}},
		{Name: "catalog", Deps: []string{"db"}},
		{Name: "cart", Deps: []string{"auth", "catalog"}},
		{Name: "payments", Deps: []string{"cart"}},
		{Name: "mailer", Deps: []string{"payments"}},
		{Name: "web", Deps: []string{"catalog", "cart", "payments"}},
	}
}

// rules are the contract's defaults with two changes, in contract time:
// audit_attempts is 2 so a RETRY comes quickly, and the audit and CI
// timeouts and the build's time limit are generous, so a slow machine's
// room latency never turns into an escalation the story did not ask for.
func rules(ci bool) coordinator.Rules {
	r := coordinator.DefaultRules()
	r.AuditAttempts = 2
	r.AuditTimeout = 20 * time.Minute
	r.CITimeout = 20 * time.Minute
	r.MaxBuildTime = 8 * time.Hour
	r.CIGating = ci
	return r
}

// gitRules are the rules of the --git demo: CI gating (by foreman host),
// merge mode external, and a CI timeout long enough for real checks on a
// busy machine.
func gitRules() coordinator.Rules {
	r := rules(true)
	r.CITimeout = time.Hour
	r.Merge = coordinator.MergeExternal
	return r
}

// scaled stretches every duration of r to real time.
func scaled(r coordinator.Rules, minute time.Duration) coordinator.Rules {
	// Rules count whole milliseconds, as the room's clock does.
	ms := func(d time.Duration) time.Duration {
		return max(sim.Scale(d, minute).Round(time.Millisecond), time.Millisecond)
	}
	r.CheckinInterval = ms(r.CheckinInterval)
	r.AuditTimeout = ms(r.AuditTimeout)
	r.CITimeout = ms(r.CITimeout)
	if r.MaxBuildTime > 0 {
		r.MaxBuildTime = ms(r.MaxBuildTime)
	}
	return r
}

// builderPart is one builder of the cast.
type builderPart struct {
	name   string
	script sim.Builder
}

// cast is who builds what, and what goes wrong. Builders take only the
// components they prefer, and rest after each one, so who is free when a
// component becomes claimable (and so the story) follows from the script,
// not from luck. In contract time, roughly:
//
//	00:00 ada and bea race for db; bea is too slow and is refused.
//	00:15 bea takes auth, cal takes catalog; cal goes silent after one
//	      PROGRESS and times out half an hour later; ada, rested, takes
//	      catalog over and the ACK tells her what cal left.
//	00:30 iris fails auth once: FIX, then it passes.
//	01:05 dex takes cart and fails its audit twice: RETRY; cal takes it over.
//	01:40 bea aborts payments on an invalid specification: ESCALATE
//	      hard-blocker; olga clarifies the spec and RESOLVEs; dex takes it.
//	02:05 ada builds web while cal, on mailer, is BLOCKED on web: WAIT, and
//	      UNBLOCKED when web merges; mailer merges last: COMPLETE.
func cast() []builderPart {
	b := func(prefer []string, react, rest time.Duration, quirks map[string]sim.Quirk) sim.Builder {
		s := sim.DefaultBuilder()
		s.Prefer, s.React, s.Rest, s.Quirks = prefer, react, rest, quirks
		return s
	}
	return []builderPart{
		{"ada", b([]string{"db", "catalog", "web"}, 18*time.Second, 20*time.Minute, nil)},
		{"bea", b([]string{"db", "auth", "payments"}, time.Minute, 10*time.Minute, map[string]sim.Quirk{
			"payments": {Kind: sim.Abort, After: 2,
				Reason: "invalid_specification: the spec wants refunds both instant and batched"},
		})},
		{"cal", b([]string{"catalog", "cart", "mailer"}, 30*time.Second, 20*time.Minute, map[string]sim.Quirk{
			"catalog": {Kind: sim.GoSilent, After: 1},
			"mailer":  {Kind: sim.Block, After: 1, Dep: "web", Reason: "needs the order-confirmation page from web"},
		})},
		{"dex", b([]string{"cart", "payments"}, 30*time.Second, 25*time.Minute, nil)},
	}
}

func auditorScript() sim.Auditor {
	return sim.Auditor{Delay: 2 * time.Minute, Fail: map[string][]string{
		"auth": {"no tests for token refresh"},
		"cart": {"totals ignore discounts", "bundle discounts still ignored"},
	}}
}

func ciScript() sim.CI { return sim.CI{Delay: 2 * time.Minute} }

func operatorScript() sim.Operator {
	return sim.Operator{Delay: 3 * time.Minute, Notes: map[string]string{
		"hard-blocker": "spec clarified: refunds are batched nightly",
	}}
}

const (
	auditorName  = "iris"
	ciName       = "ci-bot"
	operatorName = "olga"
	botName      = "foreman"
	watcherName  = "watcher"
)

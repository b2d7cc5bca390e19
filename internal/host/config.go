package host

import (
	"time"

	"github.com/agentforeman/foreman/internal/host/receipt"
)

// Config is what the core knows of the build and of itself.
type Config struct {
	Self        string   // the host's sender id
	Coordinator string   // foreman's sender id
	Components  []string // the declared components: a STATUS answer naming all of them is a whole board
	Mentions    []string // names foreman answers to, stripped from the front of a line as foreman does
	Gating      bool     // rules.ci_gating: the host checks on READY and reports CI
	External    bool     // rules.merge external: the host lands approved components
	Auditors    []string // roles.auditors; none: anyone but the builder may audit
	Verified    bool     // rules.require_verified: unverified senders are not heard
	MaxParallel int      // jobs at once (default 1); landings are one at a time among them
	// Batch is host.batch.max: the cars one check of the train vouches
	// for at most (train.go); 1, the default: each car is checked.
	Batch int
	// BatchMin and BatchWait are host.batch.min and host.batch.wait: at
	// the train's end, fewer than BatchMin cars no result vouches for wait
	// for more, as READYs to be checked together do, until the oldest of
	// them waited BatchWait; then what there is is checked. BatchMin 1
	// (the default): nothing waits.
	BatchMin  int
	BatchWait time.Duration
	// FailureDepth is host.failure_depth: how many cars behind a failed
	// one, whose chains hold it, are still checked before it is blamed
	// (train.go); 0, the default: none. Only with Batch above 1.
	FailureDepth int
	Target       string // the target branch, short name, for what the host says
	Prune        bool   // host.prune: a landed component's branch is deleted
	// BranchNamespaces is host.branch_namespaces: a builder's branches
	// are under its own name (b1/api for @b1), as the push gate lets each
	// agent foreman up starts push only there; a READY naming a branch
	// outside the builder's namespace is refused, and never checked or
	// landed (rules.go, InNamespace).
	BranchNamespaces bool
	Squash           bool // host.land_as squash: each component lands as one commit on the target (Job.Squash)
	// Retries is host.retries: how many times the shell runs a failed
	// check again on the same tree before the failure counts; a car whose
	// run did not (Job.Once) is checked again as many times before it is
	// blamed.
	Retries int
	// FlakyThreshold is host.flaky_threshold: a check command whose
	// failures passed again on the same tree more than this share of the
	// time is flaky (flakes.go); 0: none is.
	FlakyThreshold float64
	// Backoff is the first wait before a job that failed for the
	// repository's sake (locked, dirty checkout) is tried again (default
	// 30s); it doubles up to 10 times that.
	Backoff time.Duration
	// Resync is how long the host waits for foreman to answer its STATUS
	// before it asks again (default 1m).
	Resync time.Duration
	// OverlapInterval is how often, at most, one component's work in
	// progress is merged with the others' (host.overlap_interval, default
	// 30s).
	OverlapInterval time.Duration
	// Sign makes a landing's receipt of its statement (receipt.Sign with
	// the host's key): recorded before the landing, kept as the landed
	// commit's note; and the host's signed head. Without it nothing lands.
	Sign func(receipt.Signed) ([]byte, error)
	// Repository is the repository's name as receipts give it
	// (host.repository): a verifier refuses receipts naming another.
	// Without it nothing lands.
	Repository string
	// HeadEvery is how often, at most, the host signs its head again while
	// nothing lands (default receipt.HeadEvery).
	HeadEvery time.Duration
	// Checks are the configured checks (host.checks), each named as
	// checks.Quote names it: a pass counts only if its report shows each
	// of them passing, in order (rules.go). None: a clean merge passes.
	Checks []string
	// Rules decide what passed and what may land (nil: StrictRules).
	Rules Rules
}

func (c *Config) defaults() {
	if c.MaxParallel < 1 {
		c.MaxParallel = 1
	}
	if c.Batch < 1 {
		c.Batch = 1
	}
	if c.Batch == 1 {
		// A car behind that passes never lands a failed one with it: that
		// would be a batch.
		c.FailureDepth = 0
	}
	c.BatchMin = max(1, min(c.BatchMin, c.Batch))
	if c.Backoff <= 0 {
		c.Backoff = 30 * time.Second
	}
	if c.Resync <= 0 {
		c.Resync = time.Minute
	}
	if c.OverlapInterval <= 0 {
		c.OverlapInterval = 30 * time.Second
	}
	if c.Target == "" {
		c.Target = "main"
	}
	if c.HeadEvery <= 0 {
		c.HeadEvery = receipt.HeadEvery
	}
}

package workq

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Version is the format of jobs and results: a worker refuses a job of
// another, rather than guess what it asks. 3: a job is given to one
// worker (Job.Worker), on its subject.
const Version = 3

// Job is one run of a host's checks on one commit, for one worker.
type Job struct {
	V     int    `json:"v"`
	ID    string `json:"id"`    // unique: run-group-nonce; its result's key (ResultKey)
	Build string `json:"build"` // the build the host checks
	Host  string `json:"host"`  // the host's sender id, for people
	Run   int    `json:"run"`   // the host's run
	Group int    `json:"group"` // which of the run's label sets (0: the first)
	// Worker is the one worker the host gave the job to: its subject and
	// consumer are that worker's alone, and the host counts a result of
	// it only from that worker.
	Worker string `json:"worker"`

	Component string `json:"c"`
	Ref       string `json:"ref"`
	Owner     string `json:"owner,omitempty"` // the builder: whose copies of the sandbox's RW paths its checks see
	Commit    string `json:"commit"`          // exactly what to check
	Base      string `json:"base"`
	Target    string `json:"target"`

	Checks    [][]string `json:"checks"`           // in order; each a program and its arguments
	Labels    []string   `json:"labels,omitempty"` // what the worker must have (Sandboxed included)
	Env       []string   `json:"env,omitempty"`    // host.env: NAME=value as given, NAME from the worker's own environment
	TimeoutMS int64      `json:"timeout_ms"`       // for all the checks, counted by the worker
	LogLimit  int64      `json:"log_limit"`
	Retries   int        `json:"retries"`
	Sandbox   Sandbox    `json:"sandbox"`
	Fetch     Fetch      `json:"fetch"`
	// Avoid names workers that could not do this job before (they could
	// not fetch its commit, say): they leave it to others for a while.
	Avoid []string `json:"avoid,omitempty"`
	Log   string   `json:"log"` // the first try's log name (api-12.log); the host keeps it under this name
}

// Sandbox is what the host requires of the sandbox its checks run in.
type Sandbox struct {
	Required bool   `json:"required"` // the host confines its checks: so must the worker
	Net      string `json:"net"`      // none or all: the worker runs the stricter of this and its own
	Memory   int64  `json:"memory,omitempty"`
	Tasks    int    `json:"tasks,omitempty"`
	FileSize int64  `json:"file_size,omitempty"`
}

// Fetch is how the worker gets the commit: git's smart HTTP from the host,
// a ref the host keeps pointing at the commit while the job lives, with a
// token the host checks on every request.
type Fetch struct {
	URL   string `json:"url"`
	Ref   string `json:"ref"`
	Token string `json:"token"`
}

// Timeout is the job's time limit.
func (j Job) Timeout() time.Duration { return time.Duration(j.TimeoutMS) * time.Millisecond }

var (
	oidRE    = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)
	jobIDRE  = regexp.MustCompile(`^[0-9]+-[0-9]+-[0-9a-f]{8,32}$`)
	httpRE   = regexp.MustCompile(`^https?://[^\s]+$`)
	jobRefRE = regexp.MustCompile(`^refs/foreman/jobs/[0-9]+$`)
)

// Check refuses a job a worker must not run as it is: another format,
// something missing, a commit that is not an object id, a fetch that is
// not git's HTTP.
func (j Job) Check() error {
	switch {
	case j.V != Version:
		return fmt.Errorf("job format %d, this worker reads %d: run the same foreman version as the host", j.V, Version)
	case !jobIDRE.MatchString(j.ID):
		return fmt.Errorf("job id %q is not run-group-nonce", j.ID)
	case j.Build == "":
		return errors.New("no build")
	case j.Worker == "":
		return errors.New("given to no worker")
	case !oidRE.MatchString(j.Commit):
		return fmt.Errorf("commit %q is not a full object id", j.Commit)
	case len(j.Checks) == 0:
		return errors.New("no checks")
	case j.Fetch.URL == "" || j.Fetch.Ref == "":
		return errors.New("no way to fetch the commit")
	case !httpRE.MatchString(j.Fetch.URL):
		return fmt.Errorf("fetch URL %q is not http:// or https://", j.Fetch.URL)
	case !jobRefRE.MatchString(j.Fetch.Ref):
		return fmt.Errorf("fetch ref %q is not refs/foreman/jobs/RUN", j.Fetch.Ref)
	case j.Sandbox.Net != "none" && j.Sandbox.Net != "all":
		return fmt.Errorf("sandbox net %q is not none or all", j.Sandbox.Net)
	}
	for _, argv := range j.Checks {
		if len(argv) == 0 {
			return errors.New("an empty check")
		}
	}
	return nil
}

// How a job ended, as a Result says.
const (
	Passed    = "passed"    // the checks passed on the commit
	Failed    = "failed"    // they failed: Command, Line
	Infra     = "infra"     // the worker could not do it (fetch, slot, sandbox): Why; never the builder's fault
	Cancelled = "cancelled" // the host withdrew the job: its run went stale
)

// Result is how one job ended, stored once under its ResultKey.
type Result struct {
	V       int    `json:"v"`
	Job     string `json:"job"`    // the job's id
	Worker  string `json:"worker"` // who ran it ("" for the host's cancellation)
	Seq     uint64 `json:"seq"`    // the job's message in the stream, as delivered to the worker
	Commit  string `json:"commit"` // what the worker checked
	Outcome string `json:"outcome"`

	Command  string   `json:"command,omitempty"` // Failed: the check that failed
	Line     string   `json:"line,omitempty"`    // Failed: its first failing line
	Silent   bool     `json:"silent,omitempty"`
	TimedOut bool     `json:"timed_out,omitempty"`
	Stopped  bool     `json:"stopped,omitempty"`
	Flaky    []string `json:"flaky,omitempty"`
	Logs     []Log    `json:"logs,omitempty"` // each try's log, in CheckLogStream, in order
	Why      string   `json:"why,omitempty"`  // Infra: what went wrong
	// NotRun, when the failing check never started, says why (package
	// checks' words: not found, not executable, sandbox failed), with the
	// program as it was to run and the interpreter its #! line names: the
	// host's core judges from them whether the fault is the host's.
	NotRun      string `json:"not_run,omitempty"`
	Program     string `json:"program,omitempty"`
	Interpreter string `json:"interpreter,omitempty"`
	Tree        string `json:"tree,omitempty"` // the tree of Commit, as the worker checked it out

	TookMS int64     `json:"took_ms,omitempty"` // by the worker's own monotonic clock
	At     time.Time `json:"at,omitzero"`       // the worker's wall clock: for people, never compared

	Key string `json:"key,omitempty"` // the worker's public key (an nkey, U...)
	Sig string `json:"sig,omitempty"` // its signature of Signed()
}

// Log is a log a worker stored: its chunks on Subject of CheckLogStream
// from sequence First, Size bytes in all, their SHA-256 as said.
type Log struct {
	Name    string `json:"name"` // as the host keeps it in host.logs (TryLog)
	Subject string `json:"subject"`
	First   uint64 `json:"first"`
	Size    int64  `json:"size"`
	SHA256  string `json:"sha256"`
}

// Signed is what a worker signs of its result: every field the host
// decides by, in a fixed encoding (the wall clock and the time taken,
// which decide nothing, are not).
func (r Result) Signed() []byte {
	type v2 struct {
		What     string   `json:"what"`
		Job      string   `json:"job"`
		Worker   string   `json:"worker"`
		Seq      uint64   `json:"seq"`
		Commit   string   `json:"commit"`
		Tree     string   `json:"tree"`
		Outcome  string   `json:"outcome"`
		Command  string   `json:"command"`
		Line     string   `json:"line"`
		Silent   bool     `json:"silent"`
		TimedOut bool     `json:"timed_out"`
		Stopped  bool     `json:"stopped"`
		Flaky    []string `json:"flaky"`
		Logs     []Log    `json:"logs"`
		Why      string   `json:"why"`
	}
	signed := v2{"foreman-result-v2", r.Job, r.Worker, r.Seq, r.Commit, r.Tree, r.Outcome, r.Command, r.Line, r.Silent, r.TimedOut, r.Stopped,
		r.Flaky, r.Logs, r.Why}
	if r.NotRun == "" && r.Program == "" && r.Interpreter == "" {
		// As a worker before v3 signs it: a check that started.
		data, _ := json.Marshal(signed)
		return data
	}
	signed.What = "foreman-result-v3"
	data, _ := json.Marshal(struct {
		v2
		NotRun      string `json:"not_run"`
		Program     string `json:"program"`
		Interpreter string `json:"interpreter"`
	}{signed, r.NotRun, r.Program, r.Interpreter})
	return data
}

// Taken is a worker's word that it took a job (the message it was
// given), stored under its own name before it runs it: the host counts
// a result only from a worker that said so first.
type Taken struct {
	V      int    `json:"v"`
	Job    string `json:"job"`
	Worker string `json:"worker"`
	Seq    uint64 `json:"seq"`
	Commit string `json:"commit"`
	Key    string `json:"key,omitempty"`
	Sig    string `json:"sig,omitempty"` // of Signed()
}

// Signed is what a worker signs of its word.
func (t Taken) Signed() []byte {
	data, _ := json.Marshal(struct {
		What   string `json:"what"`
		Job    string `json:"job"`
		Worker string `json:"worker"`
		Seq    uint64 `json:"seq"`
		Commit string `json:"commit"`
	}{"foreman-taken-v2", t.Job, t.Worker, t.Seq, t.Commit})
	return data
}

// FetchSigned is what a worker signs to fetch a job's commit with its
// token: the token alone fetches nothing when the host knows the worker's
// key (host.workers), so a token read elsewhere is of no use to another
// worker.
func FetchSigned(job, token string) []byte {
	return []byte("foreman-fetch-v1\n" + job + "\n" + token)
}

// FetchHeader is the HTTP header a worker's fetch carries its signature
// of FetchSigned in, and the job it is for: "<job> <signature>".
const FetchHeader = "Foreman-Fetch-Signature"

// Settled is how the host settled a job, stored once: the worker whose
// result it took, or Cancelled (withdrawn). A worker running the job
// stops when it finds it settled and not by itself.
type Settled struct {
	V       int    `json:"v"`
	Job     string `json:"job"`
	Outcome string `json:"outcome"`          // Taken or Cancelled
	Worker  string `json:"worker,omitempty"` // Taken: whose result
}

// TakenBy is a Settled outcome: the host took a worker's result.
const TakenBy = "taken"

// InHand is a job a worker runs now.
type InHand struct {
	Job       string `json:"job"`
	Build     string `json:"build"`
	Component string `json:"c"`
	Run       int    `json:"run"`
	ForMS     int64  `json:"for_ms"` // how long it has run, by the worker's clock
}

// WorkerStatus is what a worker says of itself every lease.
type WorkerStatus struct {
	ID       string   `json:"id"`
	Labels   []string `json:"labels"` // Sandboxed included when it confines its checks
	Sandbox  string   `json:"sandbox"`
	Parallel int      `json:"parallel"`
	Jobs     []InHand `json:"jobs"`
	// Counters since it started.
	Done       uint64    `json:"done"`       // results it stored
	Duplicates uint64    `json:"duplicates"` // results it dropped: another was stored first
	Infra      uint64    `json:"infra"`      // jobs it could not do
	Refused    uint64    `json:"refused"`    // jobs it refused to run (malformed, a sandbox it does not have)
	Again      uint64    `json:"again"`      // jobs it ran that had been given to a worker before (which died, or stalled)
	UpMS       int64     `json:"up_ms"`
	At         time.Time `json:"at,omitzero"` // its wall clock, for people
	// JWT is its NATS user's JWT (public: no secret in it), by which the
	// host knows the worker is one the account's worker signing key made,
	// for which label sets, and not revoked.
	JWT string `json:"jwt,omitempty"`

	Seen time.Time `json:"-"` // when NATS stored it (the server's clock), as read
	Rev  uint64    `json:"-"` // its message in the bucket's stream, as read
}

// HostInFlight is a job a host waits for.
type HostInFlight struct {
	Job       string   `json:"job"`
	Component string   `json:"c"`
	Run       int      `json:"run"`
	Labels    []string `json:"labels,omitempty"`
	Worker    string   `json:"worker,omitempty"` // who it was given to ("" while no worker is free)
	WaitedMS  int64    `json:"waited_ms"`
}

// HostStatus is what a host with workers says of itself every lease.
type HostStatus struct {
	Build       string         `json:"build"`
	Host        string         `json:"host"` // its sender id
	Name        string         `json:"name"`
	Serve       string         `json:"serve"` // where workers fetch from
	MaxParallel int            `json:"max_parallel"`
	LabelSets   []string       `json:"label_sets"`
	InFlight    []HostInFlight `json:"in_flight"`
	// Unassigned is how many jobs wait for a free worker that may run
	// them (given to none yet).
	Unassigned int `json:"unassigned,omitempty"`
	// Counters since it started.
	Results uint64    `json:"results"` // results taken
	Refused uint64    `json:"refused"` // results refused: for a job it did not give, or another commit
	Retried uint64    `json:"retried"` // jobs a worker could not do, tried again
	UpMS    int64     `json:"up_ms"`
	At      time.Time `json:"at,omitzero"`

	Seen time.Time `json:"-"`
}

// TryLog is the name of a job's log for a try of its checks: first for
// the first (try 0), then with .again1, .again2... before .log, as the
// host names its own.
func TryLog(first string, try int) string {
	if try == 0 {
		return first
	}
	return strings.TrimSuffix(first, ".log") + ".again" + strconv.Itoa(try) + ".log"
}

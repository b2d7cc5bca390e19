package cluster

import (
	"github.com/agentforeman/foreman/internal/natsname"
)

// Every name foreman keeps in JetStream is here, in one place, because the
// NATS accounts that give each role its permissions (docs/NATS.md and the
// example docs/nats/foreman.conf) are written against them. One set per
// NATS account: every process of a team shares them.

// foreman's own: the builds' logs, leases and snapshots.
const (
	LeaseBucket    = "FOREMAN_LEASES"    // one lease per build
	StateBucket    = "FOREMAN_STATE"     // the builds' snapshot pointers
	NodeBucket     = "FOREMAN_NODES"     // the processes of the pool, for sharing builds out
	SnapshotBucket = "FOREMAN_SNAPSHOTS" // object store: the builds' snapshots
	streamPrefix   = "FOREMAN_LOG_"      // a build's log: FOREMAN_LOG_<key>, subjects foreman.<key>.log and .fence
)

// foreman host's: one leading host per build and its standbys, and the
// host's ledger of each build.
const (
	HostLeaseBucket = "FOREMAN_HOST_LEASES" // one lease per build's host
	HostNodeBucket  = "FOREMAN_HOST_NODES"  // the host processes, leading or standing by, for cluster status
	ledgerPrefix    = "FOREMAN_LEDGER_"     // a build's host ledger: FOREMAN_LEDGER_<key>, subjects foreman-host.<key>.ledger and .fence
)

// The check workers' (foreman worker): the host puts jobs on a work queue,
// a worker takes one, stores its result and its log; the host reads them.
// A worker's credentials may write these and nothing above.
const (
	// JobStream is the work queue of check jobs (retention: work queue),
	// on the subjects JobSubject names (JobSubjects, all of them).
	JobStream   = "FOREMAN_JOBS"
	JobSubjects = "foreman-jobs.>"
	// ResultBucket is a KV bucket of what each worker took and how it
	// ended, and how the host settled each job (workq's keys): every key
	// written once, never overwritten or deleted.
	ResultBucket = "FOREMAN_RESULTS"
	// CheckLogStream is a stream of the checks' logs in chunks, one
	// subject per log (CheckLogSubjects), written by workers, read by the
	// host; nothing in it is deleted or rolled up before it ages out.
	CheckLogStream   = "FOREMAN_CHECK_LOGS"
	CheckLogSubjects = "foreman-logs.>"
	// WorkerBucket is a KV bucket where each worker says it is alive and
	// what it runs, for foreman cluster status.
	WorkerBucket = "FOREMAN_WORKERS"
)

// Key is a build's name as NATS can hold it in a stream's name, a subject
// and a KV key (natsname.Key).
func Key(build string) string { return natsname.Key(build) }

// StreamName is the stream that holds a build's log.
func StreamName(build string) string { return streamPrefix + Key(build) }

// LedgerStream is the stream that holds a build's host ledger.
func LedgerStream(build string) string { return ledgerPrefix + Key(build) }

// LogSubject is the subject of a build's log entries: only its leading
// foreman may publish there.
func LogSubject(build string) string { return logSubject(Key(build)) }

// LedgerSubject is the subject of a build's host ledger records: only its
// leading host may publish there.
func LedgerSubject(build string) string { return ledgerSubject(Key(build)) }

// JobSubject is the subject a check job of build goes on: label is what
// the job asks of a worker (host.checks' label, worker.labels), "any" when
// it asks nothing. A label is a word of letters, digits, - and _.
func JobSubject(build, label string) string {
	if label == "" {
		label = "any"
	}
	return "foreman-jobs." + Key(build) + "." + Key(label)
}

func logSubject(key string) string    { return "foreman." + key + ".log" }
func fenceSubject(key string) string  { return "foreman." + key + ".fence" }
func ledgerSubject(key string) string { return "foreman-host." + key + ".ledger" }
func ledgerFence(key string) string   { return "foreman-host." + key + ".fence" }
func snapKey(key string) string       { return "snap." + key }

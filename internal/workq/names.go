package workq

import (
	"slices"
	"strings"

	"github.com/agentforeman/foreman/internal/cluster"
	"github.com/agentforeman/foreman/internal/natsname"
)

// The queue's streams and buckets: cluster's names, which the NATS
// accounts of docs/nats/foreman.conf are written against.
const (
	JobStream        = cluster.JobStream        // the work queue
	JobSubjects      = cluster.JobSubjects      // every job's subject
	ResultBucket     = cluster.ResultBucket     // KV: one result per job, the first stored
	CheckLogStream   = cluster.CheckLogStream   // the checks' logs, in chunks
	CheckLogSubjects = cluster.CheckLogSubjects // every log's subject
	WorkerBucket     = cluster.WorkerBucket     // KV: the workers and hosts, for cluster status
)

// Sandboxed is the label a job of a host that confines its checks asks
// for, and that every worker that confines its checks has: a worker with
// host.sandbox off never gets such a job (config.SandboxedLabel).
const Sandboxed = natsname.Sandboxed

// Any is the label set of a job that asks for no label.
const Any = natsname.Any

// LabelSet is the name of a set of labels: sorted, joined by +, or Any.
func LabelSet(labels []string) string { return natsname.LabelSet(labels) }

// Labels are the labels a LabelSet names.
func Labels(set string) []string {
	if set == Any || set == "" {
		return nil
	}
	return strings.Split(set, "+")
}

// Fits reports whether a worker with labels have may run a job of set.
func Fits(set string, have []string) bool {
	for _, l := range Labels(set) {
		if !slices.Contains(have, l) {
			return false
		}
	}
	return true
}

// JobSubject is the subject a job of build goes on when the host gives
// it to worker: only that worker's consumer takes it (WorkerConsumer).
func JobSubject(build, worker string) string {
	return "foreman-jobs." + cluster.Key(build) + "." + cluster.Key(worker)
}

// buildJobs is every job subject of build, whoever it was given to.
func buildJobs(build string) string { return "foreman-jobs." + cluster.Key(build) + ".>" }

// WorkerConsumer is the durable consumer of worker's jobs, and of no one
// else's: its NATS user may pull and acknowledge from it alone
// ($JS.ACK.FOREMAN_JOBS.worker-<id>.>), so no worker can take, release,
// delay or answer a job the host gave another.
func WorkerConsumer(worker string) string { return "worker-" + cluster.Key(worker) }

// workerFilter is every build's jobs given to worker.
func workerFilter(worker string) string { return "foreman-jobs.*." + cluster.Key(worker) }

// The keys of ResultBucket. Each worker writes under its own name, which
// its NATS user's permissions name (docs/nats): what it took (t.) and how
// it ended (r.). The host alone writes how a job was settled (x.): taken
// from a worker, or withdrawn; that is all a worker may read there.
// Every key is written once: the bucket keeps one message per key and
// refuses a second (Make), so nothing is overwritten or deleted.

// ResultKey is where worker stores how its run of a job of build ended.
func ResultKey(build, job, worker string) string {
	return "r." + cluster.Key(build) + "." + cluster.Key(job) + "." + cluster.Key(worker)
}

// TakenKey is where worker says it took a job of build, before it runs.
func TakenKey(build, job, worker string) string {
	return "t." + cluster.Key(build) + "." + cluster.Key(job) + "." + cluster.Key(worker)
}

// SettledKey is where the host says how a job of build was settled.
func SettledKey(build, job string) string { return "x." + cluster.Key(build) + "." + cluster.Key(job) }

// resultsOf is every result key of build (jobKey "*": of any job).
func resultsOf(build, jobKey string) string { return "r." + cluster.Key(build) + "." + jobKey + ".*" }

// LogSubject is where worker stores its logs, in chunks: one subject for
// all of a worker's logs, so that the log stream's limit per subject
// (LogChunks) bounds what each worker may store. Each chunk names its log
// (LogHeader: LogOf).
func LogSubject(worker string) string { return "foreman-logs." + cluster.Key(worker) }

// LogHeader is the header each chunk of a log names its log in.
const LogHeader = "Foreman-Log"

// LogOf is what a chunk of a log of a job of build says in LogHeader.
func LogOf(build, job, name string) string {
	return cluster.Key(build) + "/" + cluster.Key(job) + "/" + cluster.Key(name)
}

// workerKey and hostKey are where a worker and a host say they are there.
func workerKey(id string) string  { return "w." + cluster.Key(id) }
func hostKey(build string) string { return "h." + cluster.Key(build) }

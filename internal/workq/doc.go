// Package workq is the cluster's queue of check jobs in NATS JetStream, as
// foreman host (with cluster.nats) and foreman worker share it:
//
//   - Jobs: the stream FOREMAN_JOBS, retention work queue, one subject per
//     build and label set (JobSubject). Each label set has one durable pull
//     consumer, shared by every worker that has those labels: a job is
//     delivered to one of them at a time, and deleted from the stream when
//     that one acknowledges it. A worker acknowledges only once the result
//     is stored, and keeps the job in hand with in-progress acks while it
//     runs; one that dies has its job delivered again after the
//     consumer's ack wait (cluster.lease).
//   - Results: the KV bucket FOREMAN_RESULTS, one key per job
//     (ResultKey). A result is stored by create, which fails when the key
//     exists: the first result stored wins, and a second worker that ran
//     the same job (a delivery again after a stall) finds it taken and
//     drops its own. The host stores a cancellation the same way, so a
//     run gone stale never gets a result.
//   - Logs: the object store FOREMAN_CHECK_LOGS, which the host copies
//     into host.logs, where the board serves them as it serves its own.
//   - Who is there: the KV bucket FOREMAN_WORKERS, where each worker and
//     each host with workers says, every lease, what it has in hand.
//
// The names are those the cluster's NATS accounts are written against
// (cluster.names). No clock is compared across processes: a worker counts
// its job's time limit on its own monotonic clock, the host counts nothing
// of a worker's, and a dead worker is found by JetStream's ack wait.
package workq

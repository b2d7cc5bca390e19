package natsauth

import (
	"github.com/nats-io/jwt/v2"

	"github.com/agentforeman/foreman/internal/natsname"
)

var about = map[string]string{
	RoleForeman: "the builds' logs, leases, snapshots and the pool",
	RoleHost:    "the hosts' leases and ledgers, the workers' queue it makes and their results it reads",
	RoleWorker:  "its own jobs, its own word, results, logs and presence",
	RoleReader:  "foreman cluster status: reads, writes nothing",
}

// Permissions are what a role's users may do (docs/NATS.md says why each
// line is there). Every name is cluster's and workq's.
func Permissions(role string) jwt.Permissions {
	var p jwt.Permissions
	switch role {
	case RoleForeman:
		// Only its own builds ({{tag(build)}}: the builds it was made
		// for): their logs, and foreman's buckets and snapshots. No
		// stream API on any other stream (never a host's ledger, the job
		// queue, the workers' results or logs), and no * of the stream
		// API but its information: NATS matches whole tokens, so a grant
		// on * streams would take in every host's ledger too.
		const build = "{{tag(build)}}"
		const log = "FOREMAN_LOG_" + build
		p.Pub.Allow.Add(
			"$JS.API.INFO", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.INFO.*",
			"$JS.API.STREAM.CREATE."+log, "$JS.API.STREAM.UPDATE."+log, "$JS.API.STREAM.DELETE."+log, "$JS.API.STREAM.PURGE."+log,
			"$JS.API.STREAM.PURGE.OBJ_FOREMAN_SNAPSHOTS", "$JS.API.STREAM.PURGE.KV_FOREMAN_STATE",
			"$JS.FC.>", "foreman."+build+".log", "foreman."+build+".fence",
			"$KV.FOREMAN_LEASES.>", "$KV.FOREMAN_STATE.>", "$KV.FOREMAN_NODES.>", "$O.FOREMAN_SNAPSHOTS.>")
		for _, stream := range []string{"KV_FOREMAN_LEASES", "KV_FOREMAN_STATE", "KV_FOREMAN_NODES", "OBJ_FOREMAN_SNAPSHOTS"} {
			p.Pub.Allow.Add("$JS.API.STREAM.CREATE."+stream, "$JS.API.STREAM.UPDATE."+stream)
		}
		for _, stream := range []string{log, "KV_FOREMAN_LEASES", "KV_FOREMAN_STATE", "KV_FOREMAN_NODES", "OBJ_FOREMAN_SNAPSHOTS"} {
			p.Pub.Allow.Add("$JS.API.STREAM.MSG.GET."+stream, "$JS.API.DIRECT.GET."+stream, "$JS.API.DIRECT.GET."+stream+".>",
				"$JS.API.CONSUMER.CREATE."+stream, "$JS.API.CONSUMER.CREATE."+stream+".>", "$JS.API.CONSUMER.DURABLE.CREATE."+stream+".>",
				"$JS.API.CONSUMER.DELETE."+stream+".>", "$JS.API.CONSUMER.INFO."+stream+".>", "$JS.API.CONSUMER.MSG.NEXT."+stream+".>")
		}
		p.Sub.Allow.Add(natsname.Inbox(RoleForeman, "") + ".>")
	case RoleHost:
		// Only its own builds ({{tag(build)}}: the builds it was made
		// for): their ledgers, their jobs (foreman-jobs.<build>.*), how
		// their jobs were settled (x.<build>.*), their word in the
		// workers' bucket (h.<build>); and the streams of fixed names it
		// makes. It reads through the stream API only those streams
		// (never foreman's logs), the results of its own builds only, and
		// makes consumers on them alone. Every prefix ends in > where a
		// longer subject must be covered too.
		const build = "{{tag(build)}}"
		const ledger = "FOREMAN_LEDGER_" + build
		p.Pub.Allow.Add(
			"$JS.API.INFO", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.INFO.*",
			"$JS.API.STREAM.CREATE."+ledger, "$JS.API.STREAM.PURGE."+ledger,
			"$JS.API.STREAM.CREATE.KV_FOREMAN_HOST_LEASES", "$JS.API.STREAM.CREATE.KV_FOREMAN_HOST_NODES",
			"$JS.API.STREAM.CREATE.FOREMAN_JOBS", "$JS.API.STREAM.UPDATE.FOREMAN_JOBS",
			"$JS.API.STREAM.CREATE.KV_FOREMAN_RESULTS", "$JS.API.STREAM.UPDATE.KV_FOREMAN_RESULTS",
			"$JS.API.STREAM.CREATE.KV_FOREMAN_WORKERS", "$JS.API.STREAM.UPDATE.KV_FOREMAN_WORKERS",
			"$JS.API.STREAM.CREATE.FOREMAN_CHECK_LOGS", "$JS.API.STREAM.UPDATE.FOREMAN_CHECK_LOGS",
			"$JS.API.CONSUMER.LIST.FOREMAN_JOBS",
			// Read: its ledgers, its leases, the queue, the workers' word
			// and logs; the results of its own builds only (a direct get
			// names the key; a watch's filter is in the subject).
			"$JS.API.DIRECT.GET.KV_FOREMAN_RESULTS.$KV.FOREMAN_RESULTS.*."+build+".>",
			"$JS.API.CONSUMER.CREATE.KV_FOREMAN_RESULTS.*.$KV.FOREMAN_RESULTS.*."+build+".>",
			"$JS.API.CONSUMER.DELETE.KV_FOREMAN_RESULTS.*", "$JS.API.CONSUMER.INFO.KV_FOREMAN_RESULTS.*",
			"$JS.API.DIRECT.GET.FOREMAN_CHECK_LOGS",
			"$JS.FC.>",
			"foreman-host."+build+".ledger", "foreman-host."+build+".fence",
			"$KV.FOREMAN_HOST_LEASES.>", "$KV.FOREMAN_HOST_NODES.>",
			"foreman-jobs."+build+".*", "$KV.FOREMAN_RESULTS.x."+build+".*", "$KV.FOREMAN_WORKERS.h."+build,
			ClaimsSubject)
		for _, stream := range []string{ledger, "KV_FOREMAN_HOST_LEASES", "KV_FOREMAN_HOST_NODES", "FOREMAN_JOBS", "KV_FOREMAN_WORKERS"} {
			p.Pub.Allow.Add("$JS.API.STREAM.MSG.GET."+stream, "$JS.API.DIRECT.GET."+stream, "$JS.API.DIRECT.GET."+stream+".>",
				"$JS.API.CONSUMER.CREATE."+stream, "$JS.API.CONSUMER.CREATE."+stream+".>", "$JS.API.CONSUMER.DELETE."+stream+".>",
				"$JS.API.CONSUMER.INFO."+stream+".>", "$JS.API.CONSUMER.MSG.NEXT."+stream+".>")
		}
		p.Sub.Allow.Add(natsname.Inbox(RoleHost, "") + ".>")
	case RoleWorker:
		// Filled in by the server for each user: {{name()}} its name. It
		// pulls and acknowledges only from its own consumer (the host
		// hands each job to one worker, on its subject), reads only how
		// a job was settled, writes only under its own name, and reads no
		// stream's information (STREAM.INFO with a subject filter lists
		// every build's jobs, results and logs).
		const own = "worker-{{name()}}"
		p.Pub.Allow.Add(
			"$JS.API.INFO", // the account's totals: that JetStream is there
			"$JS.API.CONSUMER.INFO.FOREMAN_JOBS."+own,
			"$JS.API.CONSUMER.MSG.NEXT.FOREMAN_JOBS."+own,
			"$JS.ACK.FOREMAN_JOBS."+own+".>",
			"$JS.API.DIRECT.GET.KV_FOREMAN_RESULTS.$KV.FOREMAN_RESULTS.x.>",
			"$KV.FOREMAN_RESULTS.t.*.*.{{name()}}",
			"$KV.FOREMAN_RESULTS.r.*.*.{{name()}}",
			"foreman-logs.{{name()}}",
			"$KV.FOREMAN_WORKERS.w.{{name()}}")
		p.Sub.Allow.Add(natsname.Inbox(RoleWorker, "") + "{{name()}}.>") // a name is its own key (Creds)
	case RoleReader:
		p.Pub.Allow.Add(
			"$JS.API.INFO", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.INFO.*", "$JS.API.STREAM.MSG.GET.*",
			"$JS.API.DIRECT.GET.>",
			"$JS.API.CONSUMER.CREATE.KV_FOREMAN_LEASES.>", "$JS.API.CONSUMER.CREATE.KV_FOREMAN_HOST_LEASES.>",
			"$JS.API.CONSUMER.CREATE.KV_FOREMAN_HOST_NODES.>", "$JS.API.CONSUMER.CREATE.KV_FOREMAN_WORKERS.>",
			"$JS.API.CONSUMER.DELETE.>", "$JS.FC.>")
		p.Sub.Allow.Add(natsname.Inbox(RoleReader, "") + ".>")
	}
	return p
}

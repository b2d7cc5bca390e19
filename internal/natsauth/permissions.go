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
		// A stream per build is granted by *, which the denies narrow:
		// nothing of the hosts' or the workers' by name.
		p.Pub.Allow.Add(
			"$JS.API.INFO", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.INFO.*", "$JS.API.STREAM.CREATE.*",
			"$JS.API.STREAM.DELETE.*", "$JS.API.STREAM.PURGE.*", "$JS.API.STREAM.MSG.GET.*", "$JS.API.DIRECT.GET.>",
			"$JS.API.CONSUMER.CREATE.>", "$JS.API.CONSUMER.DELETE.>", "$JS.API.CONSUMER.INFO.>", "$JS.API.CONSUMER.MSG.NEXT.>",
			"$JS.FC.>", "foreman.*.log", "foreman.*.fence",
			"$KV.FOREMAN_LEASES.>", "$KV.FOREMAN_STATE.>", "$KV.FOREMAN_NODES.>", "$O.FOREMAN_SNAPSHOTS.>")
		p.Pub.Deny.Add(
			"$JS.API.STREAM.*.KV_FOREMAN_HOST_LEASES", "$JS.API.STREAM.*.KV_FOREMAN_HOST_NODES",
			"$JS.API.STREAM.*.FOREMAN_JOBS", "$JS.API.STREAM.*.KV_FOREMAN_RESULTS",
			"$JS.API.STREAM.*.FOREMAN_CHECK_LOGS", "$JS.API.STREAM.*.KV_FOREMAN_WORKERS")
		p.Sub.Allow.Add(natsname.Inbox(RoleForeman, "") + ".>")
	case RoleHost:
		// Only its own builds' ledgers ({{tag(build)}}: the builds it was
		// made for) and the streams of fixed names it makes: it cannot
		// make a stream of any other name (one that would take foreman's
		// subjects), nor purge any other (a build's log).
		const ledger = "FOREMAN_LEDGER_{{tag(build)}}"
		p.Pub.Allow.Add(
			"$JS.API.INFO", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.INFO.*",
			"$JS.API.STREAM.CREATE."+ledger, "$JS.API.STREAM.PURGE."+ledger,
			"$JS.API.STREAM.CREATE.KV_FOREMAN_HOST_LEASES", "$JS.API.STREAM.CREATE.KV_FOREMAN_HOST_NODES",
			"$JS.API.STREAM.CREATE.FOREMAN_JOBS", "$JS.API.STREAM.PURGE.FOREMAN_JOBS",
			"$JS.API.STREAM.CREATE.KV_FOREMAN_RESULTS", "$JS.API.STREAM.UPDATE.KV_FOREMAN_RESULTS",
			"$JS.API.STREAM.CREATE.KV_FOREMAN_WORKERS", "$JS.API.STREAM.UPDATE.KV_FOREMAN_WORKERS",
			"$JS.API.STREAM.CREATE.FOREMAN_CHECK_LOGS", "$JS.API.STREAM.UPDATE.FOREMAN_CHECK_LOGS",
			"$JS.API.STREAM.MSG.GET.*", "$JS.API.DIRECT.GET.>",
			"$JS.API.CONSUMER.CREATE.>", "$JS.API.CONSUMER.DELETE.>", "$JS.API.CONSUMER.INFO.>",
			"$JS.API.CONSUMER.LIST.FOREMAN_JOBS", "$JS.API.CONSUMER.MSG.NEXT.>", "$JS.FC.>",
			"foreman-host.{{tag(build)}}.ledger", "foreman-host.{{tag(build)}}.fence",
			"$KV.FOREMAN_HOST_LEASES.>", "$KV.FOREMAN_HOST_NODES.>",
			"foreman-jobs.>", "$KV.FOREMAN_RESULTS.x.>", "$KV.FOREMAN_WORKERS.h.>",
			ClaimsSubject)
		p.Sub.Allow.Add(natsname.Inbox(RoleHost, "") + ".>")
	case RoleWorker:
		// Filled in by the server for each user: {{name()}} its name,
		// {{tag(set)}} each label set it was made for.
		const set = "workers-{{tag(set)}}"
		p.Pub.Allow.Add(
			"$JS.API.INFO",
			"$JS.API.STREAM.INFO.FOREMAN_JOBS",
			"$JS.API.CONSUMER.INFO.FOREMAN_JOBS."+set,
			"$JS.API.CONSUMER.MSG.NEXT.FOREMAN_JOBS."+set,
			"$JS.ACK.FOREMAN_JOBS."+set+".>",
			"$JS.API.STREAM.INFO.KV_FOREMAN_RESULTS",
			"$JS.API.DIRECT.GET.KV_FOREMAN_RESULTS.$KV.FOREMAN_RESULTS.x.>",
			"$KV.FOREMAN_RESULTS.t.*.*.{{name()}}",
			"$KV.FOREMAN_RESULTS.r.*.*.{{name()}}",
			"$JS.API.STREAM.INFO.FOREMAN_CHECK_LOGS",
			"foreman-logs.*.*.{{name()}}.*",
			"$JS.API.STREAM.INFO.KV_FOREMAN_WORKERS",
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

package natsauth

import (
	"strings"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/stretchr/testify/assert"
)

// overlaps reports whether some subject matches both patterns, token by
// token: * is any one token, > any one or more to the end.
func overlaps(a, b string) bool {
	at, bt := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(at) && i < len(bt); i++ {
		if at[i] == ">" || bt[i] == ">" {
			return true
		}
		if at[i] != bt[i] && at[i] != "*" && bt[i] != "*" {
			return false
		}
	}
	return len(at) == len(bt)
}

// filled is a role's publish permissions as the server fills them in for
// a user named name with tag values (each template of a tag taking each
// value).
func filled(p jwt.Permissions, name string, tags map[string][]string) []string {
	var out []string
	for _, s := range p.Pub.Allow {
		subjects := []string{strings.ReplaceAll(s, "{{name()}}", name)}
		for tag, values := range tags {
			var next []string
			for _, sub := range subjects {
				if !strings.Contains(sub, "{{tag("+tag+")}}") {
					next = append(next, sub)
					continue
				}
				for _, v := range values {
					next = append(next, strings.ReplaceAll(sub, "{{tag("+tag+")}}", v))
				}
			}
			subjects = next
		}
		out = append(out, subjects...)
	}
	return out
}

// What no user of a role may publish to (another worker's deliveries and
// words, another build's jobs, settlements, results, ledger and log,
// what another role keeps), for worker w1 and for a host and a foreman
// made for build shop.
var forbidden = map[string][]string{
	RoleWorker: {
		"$JS.ACK.FOREMAN_JOBS.worker-w2.>", "$JS.API.CONSUMER.MSG.NEXT.FOREMAN_JOBS.worker-w2",
		"$JS.API.CONSUMER.INFO.FOREMAN_JOBS.worker-w2", "$JS.API.CONSUMER.CREATE.>", "$JS.API.CONSUMER.DURABLE.CREATE.>",
		"$KV.FOREMAN_RESULTS.r.*.*.w2", "$KV.FOREMAN_RESULTS.t.*.*.w2", "$KV.FOREMAN_RESULTS.x.>", "foreman-logs.w2",
		"$KV.FOREMAN_WORKERS.w.w2", "$KV.FOREMAN_WORKERS.h.>", "foreman-jobs.>", "$JS.API.STREAM.>",
		"$JS.API.DIRECT.GET.KV_FOREMAN_RESULTS.$KV.FOREMAN_RESULTS.r.>", "$JS.API.DIRECT.GET.KV_FOREMAN_RESULTS.$KV.FOREMAN_RESULTS.t.>",
		"$JS.API.DIRECT.GET.FOREMAN_CHECK_LOGS.>", "$JS.API.DIRECT.GET.FOREMAN_CHECK_LOGS",
		"foreman.>", "foreman-host.>",
	},
	RoleHost: {
		"foreman-jobs.other.*", "$KV.FOREMAN_RESULTS.x.other.*", "$KV.FOREMAN_RESULTS.r.>", "$KV.FOREMAN_RESULTS.t.>",
		"$JS.API.DIRECT.GET.KV_FOREMAN_RESULTS.$KV.FOREMAN_RESULTS.*.other.>",
		"$JS.API.CONSUMER.CREATE.KV_FOREMAN_RESULTS.*.$KV.FOREMAN_RESULTS.*.other.>",
		"$JS.API.STREAM.MSG.GET.KV_FOREMAN_RESULTS", "$KV.FOREMAN_WORKERS.h.other", "$KV.FOREMAN_WORKERS.w.>",
		"foreman-host.other.ledger", "foreman-host.other.fence", "$JS.API.STREAM.PURGE.FOREMAN_LEDGER_other",
		"$JS.API.STREAM.DELETE.>", "$JS.API.STREAM.PURGE.FOREMAN_JOBS", "$JS.ACK.FOREMAN_JOBS.>",
		"$JS.API.STREAM.MSG.GET.FOREMAN_LOG_shop", "$JS.API.DIRECT.GET.FOREMAN_LOG_shop", "$JS.API.DIRECT.GET.FOREMAN_LOG_shop.>",
		"$JS.API.CONSUMER.CREATE.FOREMAN_LOG_shop", "$JS.API.CONSUMER.CREATE.FOREMAN_LOG_shop.>", "$JS.API.STREAM.PURGE.FOREMAN_LOG_shop",
		"foreman.>", "foreman-logs.>",
	},
	RoleForeman: {
		"$JS.API.STREAM.PURGE.FOREMAN_LEDGER_shop", "$JS.API.STREAM.DELETE.FOREMAN_LEDGER_shop",
		"$JS.API.STREAM.MSG.GET.KV_FOREMAN_RESULTS", "$JS.API.DIRECT.GET.KV_FOREMAN_RESULTS", "$JS.API.DIRECT.GET.KV_FOREMAN_RESULTS.>",
		"$JS.API.CONSUMER.CREATE.FOREMAN_JOBS", "$JS.API.CONSUMER.CREATE.FOREMAN_JOBS.>", "$JS.API.CONSUMER.CREATE.KV_FOREMAN_RESULTS.>",
		"$JS.API.STREAM.PURGE.FOREMAN_JOBS", "$JS.API.STREAM.MSG.GET.FOREMAN_CHECK_LOGS", "$JS.API.DIRECT.GET.FOREMAN_CHECK_LOGS.>",
		"$JS.ACK.FOREMAN_JOBS.>", "foreman.other.log", "foreman.other.fence", "$JS.API.STREAM.PURGE.FOREMAN_LOG_other",
		"$JS.API.STREAM.DELETE.FOREMAN_LOG_other", "foreman-jobs.>", "foreman-host.>", "foreman-logs.>", "$KV.FOREMAN_RESULTS.>",
	},
}

var users = map[string]struct {
	name string
	tags map[string][]string
}{
	RoleWorker:  {"w1", map[string][]string{"set": {"any", "sandboxed"}}},
	RoleHost:    {"h1", map[string][]string{"build": {"shop"}}},
	RoleForeman: {"f1", map[string][]string{"build": {"shop"}}},
}

// No publish pattern a role is allowed, wildcards included, overlaps
// another worker's ack subjects, another build's subjects, or what another
// role keeps: token by token. Every role is written with allows alone (a
// deny of five tokens does not cover a subject of six: nothing is granted
// wide and then denied). The permissions of before overlap (the control:
// the check can fail).
func TestNoRoleReachesAnothersSubjects(t *testing.T) {
	check := func(role string, p jwt.Permissions) []string {
		u := users[role]
		var hits []string
		for _, allowed := range filled(p, u.name, u.tags) {
			for _, f := range forbidden[role] {
				if overlaps(allowed, f) {
					hits = append(hits, allowed+" reaches "+f)
				}
			}
		}
		return hits
	}
	for role := range forbidden {
		p := Permissions(role)
		assert.Empty(t, p.Pub.Deny, "%s: allows alone", role)
		assert.Empty(t, check(role, p), role)
		for _, s := range filled(p, users[role].name, users[role].tags) {
			assert.NotContains(t, s, "{{", "%s: %s: a template the test does not fill", role, s)
		}
	}
	for role, before := range map[string][]string{
		RoleWorker: {"$JS.API.CONSUMER.MSG.NEXT.FOREMAN_JOBS.*", "$JS.ACK.FOREMAN_JOBS.>", "$JS.API.STREAM.INFO.FOREMAN_JOBS",
			"$JS.API.DIRECT.GET.KV_FOREMAN_RESULTS.>", "$KV.FOREMAN_RESULTS.>", "foreman-logs.>"},
		RoleHost:    {"foreman-jobs.>", "$KV.FOREMAN_RESULTS.x.>", "$JS.API.STREAM.MSG.GET.*", "$JS.API.DIRECT.GET.>", "$JS.API.CONSUMER.CREATE.>"},
		RoleForeman: {"$JS.API.STREAM.PURGE.*", "$JS.API.STREAM.DELETE.*", "$JS.API.STREAM.MSG.GET.*", "$JS.API.DIRECT.GET.>", "$JS.API.CONSUMER.CREATE.>", "foreman.*.log"},
	} {
		for _, b := range before {
			var p jwt.Permissions
			p.Pub.Allow.Add(b)
			assert.NotEmpty(t, check(role, p), "%s: %s, a permission of before, reaches what it must not", role, b)
		}
	}
}

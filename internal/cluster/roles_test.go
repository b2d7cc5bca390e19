package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/tooling/natstest"
)

// hostBefore and foremanBefore are the host's and foreman's permissions
// before each was narrowed to its own builds (issue 44), written out for
// a build (templates are a scoped key's): the controls.
func hostBefore() jwt.Permissions {
	var p jwt.Permissions
	p.Pub.Allow.Add("$JS.API.INFO", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.INFO.*", "$JS.API.STREAM.PURGE.FOREMAN_JOBS",
		"$JS.API.STREAM.MSG.GET.*", "$JS.API.DIRECT.GET.>", "$JS.API.CONSUMER.CREATE.>", "$JS.API.CONSUMER.DELETE.>",
		"$JS.API.CONSUMER.INFO.>", "foreman-jobs.>", "$KV.FOREMAN_RESULTS.x.>", "$KV.FOREMAN_WORKERS.h.>")
	p.Sub.Allow.Add("_INBOX_host.>")
	return p
}

func foremanBefore() jwt.Permissions {
	var p jwt.Permissions
	p.Pub.Allow.Add("$JS.API.INFO", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.INFO.*", "$JS.API.STREAM.CREATE.*",
		"$JS.API.STREAM.DELETE.*", "$JS.API.STREAM.PURGE.*", "$JS.API.STREAM.MSG.GET.*", "$JS.API.DIRECT.GET.>",
		"$JS.API.CONSUMER.CREATE.>", "$JS.API.CONSUMER.DELETE.>", "$JS.API.CONSUMER.INFO.>")
	p.Pub.Deny.Add("$JS.API.STREAM.*.KV_FOREMAN_HOST_LEASES", "$JS.API.STREAM.*.FOREMAN_JOBS", "$JS.API.STREAM.*.KV_FOREMAN_RESULTS")
	p.Sub.Allow.Add("_INBOX_foreman.>")
	return p
}

// roleAttack is something a host's or foreman's credentials, made for
// build "other", must not do to build shop's or the workers' streams.
type roleAttack struct {
	role, name string
	subject    string // the request
	data       string
	// worked reports, through the admin's connection, whether it did.
	worked func(ctx context.Context, admin jetstream.JetStream, answer *nats.Msg) bool
}

func roleAttacks() []roleAttack {
	answered := func(want string) func(context.Context, jetstream.JetStream, *nats.Msg) bool {
		return func(_ context.Context, _ jetstream.JetStream, m *nats.Msg) bool {
			return m != nil && strings.Contains(string(m.Data), want)
		}
	}
	msgs := func(stream string, want uint64) func(context.Context, jetstream.JetStream, *nats.Msg) bool {
		return func(ctx context.Context, js jetstream.JetStream, _ *nats.Msg) bool {
			s, err := js.Stream(ctx, stream)
			return err == nil && s.CachedInfo().State.Msgs == want
		}
	}
	consumer := func(stream, name string) func(context.Context, jetstream.JetStream, *nats.Msg) bool {
		return func(ctx context.Context, js jetstream.JetStream, _ *nats.Msg) bool {
			_, err := js.Consumer(ctx, stream, name)
			return err == nil
		}
	}
	return []roleAttack{
		{"host", "cancel another build's job (settle x.shop.<job>)", "$KV.FOREMAN_RESULTS.x.shop.1-0-aa", `{"outcome":"cancelled"}`,
			func(ctx context.Context, js jetstream.JetStream, _ *nats.Msg) bool {
				m, err := js.Conn().Request("$JS.API.DIRECT.GET.KV_FOREMAN_RESULTS.$KV.FOREMAN_RESULTS.x.shop.1-0-aa", nil, 5*time.Second)
				return err == nil && strings.Contains(string(m.Data), "cancelled")
			}},
		{"host", "give a job on another build's subject", "foreman-jobs.shop.w1", `{"id":"forged"}`, msgs(JobStream, 2)},
		{"host", "purge the job queue (every build's jobs)", "$JS.API.STREAM.PURGE." + JobStream, `{"filter":"foreman-jobs.shop.>"}`, msgs(JobStream, 0)},
		{"host", "read another build's results", "$JS.API.DIRECT.GET.KV_FOREMAN_RESULTS.$KV.FOREMAN_RESULTS.r.shop.1-0-aa.w1", "", answered("passed")},
		{"host", "read foreman's build log (direct get)", "$JS.API.DIRECT.GET." + StreamName("shop"), `{"seq":1}`, answered("secret")},
		{"host", "read foreman's build log (message get)", "$JS.API.STREAM.MSG.GET." + StreamName("shop"), `{"seq":1}`, answered("c2VjcmV0")},
		{"host", "make a consumer on foreman's build log", "$JS.API.CONSUMER.CREATE." + StreamName("shop") + ".peek",
			`{"stream_name":"` + StreamName("shop") + `","config":{"durable_name":"peek","ack_policy":"none"}}`, consumer(StreamName("shop"), "peek")},
		{"foreman", "purge a host's ledger", "$JS.API.STREAM.PURGE." + LedgerStream("shop"), "", msgs(LedgerStream("shop"), 0)},
		{"foreman", "delete another build's log", "$JS.API.STREAM.DELETE." + StreamName("shop"), "",
			func(ctx context.Context, js jetstream.JetStream, _ *nats.Msg) bool {
				_, err := js.Stream(ctx, StreamName("shop"))
				return err != nil
			}},
		{"foreman", "read the workers' results (message get)", "$JS.API.STREAM.MSG.GET.KV_FOREMAN_RESULTS", `{"seq":1}`, answered("cGFzc2Vk")},
		{"foreman", "read the workers' results (direct get)", "$JS.API.DIRECT.GET.KV_FOREMAN_RESULTS.$KV.FOREMAN_RESULTS.r.shop.1-0-aa.w1", "", answered("passed")},
		{"foreman", "make a consumer on the job queue", "$JS.API.CONSUMER.CREATE." + JobStream + ".steal.foreman-jobs.shop.w1",
			`{"stream_name":"` + JobStream + `","config":{"durable_name":"steal","filter_subject":"foreman-jobs.shop.w1","ack_policy":"explicit"}}`,
			consumer(JobStream, "steal")},
	}
}

// Each role only its own: a host's and foreman's credentials, each made
// for build "other" (foreman nats creds --builds other), try what issue 44
// found they could do to build shop and the workers: with the roles as
// foreman nats init makes them, the server refuses each; with the
// permissions of before (the control), each works, or the test would
// prove nothing. docs/NATS.md's table is this test's, row for row.
func TestEachRoleOnlyItsOwn(t *testing.T) {
	without, with := map[string]string{}, map[string]string{}
	for _, narrowed := range []bool{false, true} {
		for _, at := range roleAttacks() {
			s := natstest.StartSecured(t)
			ctx := context.Background()
			admin := rolesConn(t, s, s.CredsWith(t, "admin", jwt.Permissions{}), "admin", "_INBOX_admin", nil)
			ajs, err := jetstream.New(admin)
			require.NoError(t, err)
			seedShop(t, ajs)
			creds := s.CredsWith(t, at.role+"-before", hostBefore())
			inbox := "_INBOX_host"
			if at.role == "foreman" {
				creds, inbox = s.CredsWith(t, at.role+"-before", foremanBefore()), "_INBOX_foreman"
			}
			if narrowed {
				creds = s.Creds(t, at.role, at.role+"9", "other")
			}
			refused := make(chan string, 8)
			c := rolesConn(t, s, creds, at.role+"9", inbox, refused)
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second) // a refused request gets no answer
			m, err := c.RequestWithContext(rctx, at.subject, []byte(at.data))
			cancel()
			if err != nil {
				m = nil
			}
			worked := at.worked(ctx, ajs, m)
			key := at.role + ": " + at.name
			if narrowed {
				assert.False(t, worked, "%s: it worked with the roles narrowed", key)
				select {
				case r := <-refused:
					with[key] = "refused: " + r
				case <-time.After(30 * time.Second):
					t.Errorf("%s: the server said nothing of it", key)
				}
			} else {
				assert.True(t, worked, "%s: with the permissions of before it must work, or the test proves nothing", key)
				without[key] = "worked"
			}
		}
	}
	var table strings.Builder
	table.WriteString("\n| attack with a host's or foreman's credentials (made for build other) | before | now |\n|---|---|---|\n")
	for _, at := range roleAttacks() {
		key := at.role + ": " + at.name
		fmt.Fprintf(&table, "| %s | %s | %s |\n", key, without[key], with[key])
	}
	t.Log(table.String())

	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "NATS.md"))
	require.NoError(t, err)
	_, rows, ok := strings.Cut(string(doc), "| attack with a host's or foreman's credentials (made for build other) | before | now |\n|---|---|---|\n")
	require.True(t, ok, "docs/NATS.md has the table")
	rows, _, _ = strings.Cut(rows, "\n\n")
	var documented, tested []string
	for _, r := range strings.Split(rows, "\n") {
		cells := strings.Split(r, " | ")
		documented = append(documented, strings.ReplaceAll(strings.TrimPrefix(cells[0], "| "), "`", ""))
		assert.Equal(t, "worked", cells[1], r)
	}
	for _, at := range roleAttacks() {
		tested = append(tested, at.role+": "+at.name)
	}
	assert.Equal(t, tested, documented, "docs/NATS.md's rows and the test's attacks")
}

// seedShop makes what build shop has: foreman's log, the host's ledger,
// the job queue with a job, a result.
func seedShop(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	ctx := context.Background()
	for _, c := range []jetstream.StreamConfig{
		{Name: StreamName("shop"), Subjects: []string{LogSubject("shop")}, AllowDirect: true},
		{Name: LedgerStream("shop"), Subjects: []string{LedgerSubject("shop")}, AllowDirect: true},
		{Name: JobStream, Subjects: []string{JobSubjects}, Retention: jetstream.WorkQueuePolicy},
	} {
		_, err := js.CreateStream(ctx, c)
		require.NoError(t, err)
	}
	_, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: ResultBucket})
	require.NoError(t, err)
	for subject, data := range map[string]string{LogSubject("shop"): "secret", LedgerSubject("shop"): "landed",
		"foreman-jobs.shop.w1": `{"id":"1-0-aa"}`, "$KV." + ResultBucket + ".r.shop.1-0-aa.w1": `{"outcome":"passed"}`} {
		_, err := js.Publish(ctx, subject, []byte(data))
		require.NoError(t, err)
	}
}

func rolesConn(t *testing.T, s *natstest.Secured, creds, name, inbox string, refused chan<- string) *nats.Conn {
	t.Helper()
	cert, key := s.Client(t, name)
	opts := []nats.Option{nats.UserCredentials(creds), nats.RootCAs(s.PKI.CA), nats.ClientCert(cert, key), nats.CustomInboxPrefix(inbox)}
	if refused != nil {
		opts = append(opts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case refused <- err.Error():
			default:
			}
		}))
	}
	nc, err := nats.Connect(s.URL(), opts...)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	return nc
}

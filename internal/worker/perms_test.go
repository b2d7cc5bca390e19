package worker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"path/filepath"

	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host/remote"
	"github.com/agentforeman/foreman/internal/natsname"
	"github.com/agentforeman/foreman/internal/tooling/natstest"
	"github.com/agentforeman/foreman/internal/workq"
)

// A worker does a whole job (takes it, fetches its commit from the host,
// runs the check, stores the log and the result, says it is there) as a
// NATS user with only a worker's rights: the server refuses it nothing.
func TestAWorkerNeedsOnlyItsRights(t *testing.T) {
	op := natstest.StartSecured(t)
	as := func(role, name string) []nats.Option {
		cert, key := op.Client(t, name)
		return []nats.Option{nats.UserCredentials(op.Creds(t, role, name)), nats.RootCAs(op.PKI.CA), nats.ClientCert(cert, key),
			nats.CustomInboxPrefix(natsname.Inbox(role, name))}
	}
	hc, err := nats.Connect(op.URL(), as("host", "h1")...)
	require.NoError(t, err)
	defer hc.Close()
	hjs, _ := jetstream.New(hc)
	q, err := workq.Make(context.Background(), hjs, workq.Config{})
	require.NoError(t, err)
	_, err = q.Consumer(context.Background(), "w1", time.Second)
	require.NoError(t, err)

	var mu sync.Mutex
	var violations []string
	wc, err := nats.Connect(op.URL(), append(as("worker", "w1"), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		mu.Lock()
		violations = append(violations, err.Error())
		mu.Unlock()
	}))...)
	require.NoError(t, err)
	defer wc.Close()
	wjs, _ := jetstream.New(wc)
	w, err := New(Options{JS: wjs, ID: "w1", Work: t.TempDir(), Lease: 300 * time.Millisecond, Unconfined: true, Logger: zerolog.Nop()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	repo, err := gitrepo.Init(context.Background(), filepath.Join(t.TempDir(), "r.git"), "main", true)
	require.NoError(t, err)
	main, _ := repo.RevParse(context.Background(), "refs/heads/main")
	require.NoError(t, repo.SetRef(context.Background(), "refs/foreman/jobs/3", main, "pin"))
	gs, err := remote.ServeGit(repo.GitDir(), "127.0.0.1:0", "")
	require.NoError(t, err)
	defer gs.Close()
	j := goodJob()
	j.Commit = main
	j.Fetch = workq.Fetch{URL: gs.URL(), Ref: "refs/foreman/jobs/3", Token: gs.Grant("refs/foreman/jobs/3", "", "")}
	_, err = q.Publish(context.Background(), j)
	require.NoError(t, err)
	var x *workq.Result
	require.Eventually(t, func() bool {
		x, err = q.Result(context.Background(), "shop", j.ID, "w1")
		return err == nil && x != nil
	}, time.Minute, 20*time.Millisecond)
	assert.Equal(t, workq.Passed, x.Outcome)
	require.Len(t, x.Logs, 1)
	require.NoError(t, q.GetLog(context.Background(), "shop", j.ID, x.Logs[0], filepath.Join(t.TempDir(), "log")), "its log stored")
	require.Eventually(t, func() bool {
		workers, _, _, err := q.Status(context.Background())
		return err == nil && len(workers) == 1 && workers[0].Done == 1
	}, time.Minute, 20*time.Millisecond, "it said it was there")
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, violations)

	// And the rights are a fence: a worker's user cannot touch the queue
	// itself, nor a build's log.
	refused, cancelRefused := context.WithTimeout(context.Background(), time.Second) // a refusal has no answer
	defer cancelRefused()
	_, err = wjs.CreateStream(refused, jetstream.StreamConfig{Name: "EVIL", Subjects: []string{"evil.>"}})
	assert.Error(t, err)
	_, err = wjs.Publish(refused, "foreman.shop.log", []byte("x"))
	assert.Error(t, err)
}

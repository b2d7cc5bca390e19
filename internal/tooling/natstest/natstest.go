// Package natstest runs NATS servers with JetStream for tests, in process:
// one server, or a cluster of three on 127.0.0.1, each with its store in a
// temporary directory, any of which a test may stop and start again.
package natstest

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/require"
)

// Server is one NATS server with JetStream.
type Server struct {
	t    testing.TB
	opts server.Options
	srv  *server.Server
}

// Start starts a single server on a random port, stopped when the test ends.
func Start(t testing.TB) *Server { return StartWith(t, nil) }

// StartWith is Start with the server's options changed by mutate first.
func StartWith(t testing.TB, mutate func(*server.Options)) *Server {
	t.Helper()
	s := &Server{t: t, opts: server.Options{
		ServerName: "n0", Host: "127.0.0.1", Port: freePort(t), JetStream: true,
		StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
		JetStreamMaxMemory: 64 << 20, JetStreamMaxStore: 16 << 30, // a limit, not space taken: what the queue reserves fits
	}}
	if mutate != nil {
		mutate(&s.opts)
	}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// URL is the server's client URL.
func (s *Server) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", s.opts.Port) }

// Name is the server's name in its cluster.
func (s *Server) Name() string { return s.opts.ServerName }

// Running reports whether the server runs.
func (s *Server) Running() bool { return s.srv != nil }

// Raw is the running server.
func (s *Server) Raw() *server.Server { return s.srv }

// Start starts the server (again), on the same port and store.
func (s *Server) Start() {
	s.t.Helper()
	opts := s.opts
	srv, err := server.NewServer(&opts)
	require.NoError(s.t, err)
	go srv.Start()
	require.True(s.t, srv.ReadyForConnections(30*time.Second), "nats-server did not start")
	s.srv = srv
}

// Stop stops the server, as a crash of its node would (its store stays).
func (s *Server) Stop() {
	if s.srv == nil {
		return
	}
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
	s.srv = nil
}

// Cluster is three servers in one JetStream cluster.
type Cluster struct {
	Servers []*Server
}

// StartCluster starts a cluster of three, stopped when the test ends, and
// waits until JetStream has a leader.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	const n = 3
	ports := freePorts(t, 2*n) // all at once, so that no two are the same
	routePorts, clientPorts := ports[:n], ports[n:]
	var routes []string
	for _, p := range routePorts {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	c := &Cluster{}
	for i := range n {
		s := &Server{t: t, opts: server.Options{
			ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: clientPorts[i], JetStream: true,
			StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
			JetStreamMaxMemory: 64 << 20, JetStreamMaxStore: 16 << 30, // a limit, not space taken: what the queue reserves fits
			Cluster: server.ClusterOpts{Name: "foreman-test", Host: "127.0.0.1", Port: routePorts[i]},
			Routes:  server.RoutesFromStr(strings.Join(routes, ",")),
		}}
		c.Servers = append(c.Servers, s)
	}
	for _, s := range c.Servers {
		opts := s.opts
		srv, err := server.NewServer(&opts)
		require.NoError(t, err)
		go srv.Start()
		s.srv = srv
		t.Cleanup(s.Stop)
	}
	for _, s := range c.Servers {
		require.True(t, s.srv.ReadyForConnections(30*time.Second), "nats-server did not start")
	}
	c.WaitLeader()
	return c
}

// URL lists every server's URL, as a client takes them.
func (c *Cluster) URL() string {
	var urls []string
	for _, s := range c.Servers {
		urls = append(urls, s.URL())
	}
	return strings.Join(urls, ",")
}

// Leader is the server that leads JetStream's meta group now; nil if none.
func (c *Cluster) Leader() *Server {
	for _, s := range c.Servers {
		if s.srv != nil && s.srv.JetStreamIsLeader() {
			return s
		}
	}
	return nil
}

// WaitLeader waits until JetStream has a leader and every running server
// is current with it.
func (c *Cluster) WaitLeader() *Server {
	c.Servers[0].t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if l := c.Leader(); l != nil && c.current() {
			return l
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.Servers[0].t.Fatal("the NATS cluster elected no JetStream leader")
	return nil
}

func (c *Cluster) current() bool {
	for _, s := range c.Servers {
		if s.srv != nil && !s.srv.JetStreamIsCurrent() {
			return false
		}
	}
	return true
}

func freePort(t testing.TB) int { return freePorts(t, 1)[0] }

// freePorts finds n free ports, holding each until all are found.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var out []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	return out
}

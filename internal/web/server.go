package web

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/agents"
	"github.com/agentforeman/foreman/internal/pool"
)

// Options configure a Server. The zero value is usable.
type Options struct {
	Logger  zerolog.Logger
	LogSize int           // room lines kept for the board (default 200)
	Refresh time.Duration // how often a live board is sent again when nothing was said, for health and countdowns (default 5s)
	Now     func() time.Time
	// StateFile, if set, is where the board keeps its room log and
	// counters across restarts of foreman (beside the journal's segments):
	// read by New, written while serving and when Serve ends.
	StateFile string
	// Cluster, if set, says who leads which build (foreman run in a
	// cluster): on the board, in /api/view and at /api/cluster.
	Cluster func() []pool.Lead
	// Collectors are more metrics for /metrics (the cluster's).
	Collectors []prometheus.Collector
	// OTLP, if set, receives agents' spend over OTLP/HTTP (internal/otlp):
	// served at POST /v1/metrics and /v1/logs, where exporters post.
	OTLP http.Handler
	// HostLogs is foreman host's host.logs directory, if it is on this
	// machine: the board then serves its queue and logs (hostqueue.go).
	HostLogs string
	// Agents, if set, are the processes of the agents foreman up runs
	// (internal/agents): on the board, each with its log at
	// /agents/NAME/log.
	Agents func() []agents.Status
	// Operators, if set, are the sender ids who may sign in to decide on
	// the board (roles.operators; decide.go). Without it nobody can.
	Operators func() []string
	// Names are more hosts (host or host:port, as a browser's address
	// has it) the board is reached by, besides where it listens
	// (http.names): an operator signs in only at one of the board's own
	// names (decide.go).
	Names []string
}

// Server serves the board, the JSON view, health and metrics.
type Server struct {
	opts     Options
	src      atomic.Pointer[sourceRef]
	lastView atomic.Pointer[coordinator.View] // the latest the bot gave, for when it stops answering
	metrics  *metrics
	handler  http.Handler
	dec      *decisions   // sign-ins to decide on the board
	addr     atomic.Value // *net.TCPAddr: where Serve listens

	snap   atomic.Pointer[snapshot] // the latest; see snapshotFor
	takeMu sync.Mutex               // one snapshot is taken at a time

	mu      sync.Mutex
	log     *roomLog
	esc     map[string]Escalation // by subject
	names   nameBook
	room    roster
	tally   tally
	base    base          // set by New only
	dirty   bool          // something to carry changed since the last save
	changed chan struct{} // closed, and replaced, whenever something was heard, said or named
	gen     uint64        // changes to the view signalled so far
}

// sourceRef lets an interface value sit behind an atomic pointer.
type sourceRef struct{ Source }

// New makes a server with nothing attached yet: until Attach it reports
// itself unhealthy and serves an empty board.
func New(opts Options) *Server {
	if opts.LogSize <= 0 {
		opts.LogSize = 200
	}
	if opts.Refresh <= 0 {
		opts.Refresh = 5 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{opts: opts, log: newRoomLog(opts.LogSize), esc: map[string]Escalation{}, changed: make(chan struct{}), dec: newDecisions()}
	s.metrics = newMetrics(s)
	s.handler = s.routes()
	if opts.StateFile != "" {
		if err := s.loadCarried(); err != nil {
			opts.Logger.Warn().Err(err).Msg("the board starts without its earlier log and counters")
		}
	}
	return s
}

// Attach sets what the server reports on. The bot must exist before it
// can be attached, and its options need the hooks first: hence two steps.
func (s *Server) Attach(src Source) {
	s.src.Store(&sourceRef{src})
	s.notify()
}

func (s *Server) source() Source {
	if r := s.src.Load(); r != nil {
		return r.Source
	}
	return nil
}

// Handler serves every endpoint.
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.serveIndex)
	mux.Handle("GET /assets/", serveAssets())
	mux.HandleFunc("GET /healthz", s.serveHealth)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /api/view", s.serveView)
	mux.HandleFunc("GET /events", s.serveEvents)
	mux.HandleFunc("GET /api/cluster", s.serveCluster)
	mux.HandleFunc("GET /agents/{name}/log", s.serveAgentLog)
	mux.HandleFunc("GET /ci/queue", s.serveCIQueue)
	mux.HandleFunc("GET /ci/logs/{name}", s.serveCILog)
	mux.HandleFunc("GET /api/login/challenge", s.serveChallenge)
	mux.HandleFunc("POST /api/login", s.serveLogin)
	mux.HandleFunc("GET /api/session", s.serveSession)
	mux.HandleFunc("POST /api/session", s.serveSession)
	mux.HandleFunc("POST /api/decide", s.serveDecide)
	mux.HandleFunc("GET /api/relay", s.serveRelay)
	if s.opts.OTLP != nil {
		mux.Handle("POST /v1/metrics", s.opts.OTLP)
		mux.Handle("POST /v1/logs", s.opts.OTLP)
	}
	return secured(mux)
}

// secured adds the headers that keep a page showing text from the room
// from ever running it: the page loads only its own scripts and styles.
func secured(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

// shutdownGrace is how long open requests get once the bot has stopped.
const shutdownGrace = 3 * time.Second

// Serve serves on ln until ctx ends, then shuts down. Live streams end
// with ctx too, since they would otherwise hold the shutdown open.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		s.addr.Store(a)
	}
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		// No ReadTimeout: live streams and a relay's wait are long
		// requests. A body's deadline is its handler's (the OTLP
		// receiver sets one); a connection left open between requests
		// is closed after IdleTimeout rather than held for ever.
		IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return ctx },
		ErrorLog:    newErrorLog(s.opts.Logger),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	go s.follow(ctx)
	if s.opts.StateFile != "" {
		kept := make(chan struct{})
		go func() { defer close(kept); s.keepCarried(ctx) }()
		defer func() { <-kept }()
	}
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	stop, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	err := hs.Shutdown(stop)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// URL is the address people open for a listener: an unspecified host
// (0.0.0.0, ::) becomes the loopback address, which is sure to reach it.
func URL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String() + "/"
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

// follow fetches the view after every change, whether or not anyone is
// watching, so that a bot that stops (the end of a demo, a crash) leaves
// its final board behind rather than whichever one was last asked for.
// It fetches at once, not after a pause: the bot may stop right after its
// last line.
//
// What it takes is the snapshot live boards use, so a viewer woken by the
// same change finds it taken already.
func (s *Server) follow(ctx context.Context) {
	for {
		changed := s.watch() // taken first: a change during the fetch is not missed
		if s.source() != nil {
			s.snapshotFor(ctx, want{gen: s.generation()})
		}
		// A view is built in the bot's goroutine and costs a walk of every
		// component: under load, refresh at most followEvery, not per event.
		select {
		case <-ctx.Done():
			return
		case <-time.After(followEvery):
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// followEvery is the least time between two views the board fetches on its
// own; people do not read faster than that.
const followEvery = 200 * time.Millisecond

// keepView remembers v as the last view unless a later one is kept
// already: fetches from the board, the stream and follow race, and the
// slowest must not put an older state back.
func (s *Server) keepView(v coordinator.View) {
	for {
		old := s.lastView.Load()
		if old != nil && old.At.After(v.At) {
			return
		}
		if s.lastView.CompareAndSwap(old, &v) {
			return
		}
	}
}

package remote

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os/exec"
	"strings"
	"time"
)

// GitServer serves the host's repository to its workers, read-only: git's
// smart HTTP (git http-backend, run as a CGI program per request),
// upload-pack only, nothing else of the repository's files, and only to a
// request that carries this run's token, made afresh at every start and
// handed to the workers inside their jobs.
//
// Why this transport: the commit a worker checks is usually a merge the
// host made a moment ago, held only in host.repo. Served over git's own
// protocol, a worker fetches it into a mirror it keeps between jobs, and
// each fetch brings only the objects the mirror lacks (a few kilobytes for
// a branch's new commit), where a git bundle in the object store would
// carry the history every time, or need the host to guess what each
// worker holds; a shared remote (host.remote) would be a second
// repository to push every merge to before any check could start.
type GitServer struct {
	gitDir string
	token  string
	ln     net.Listener
	srv    *http.Server
	url    string
	cgi    *cgi.Handler
}

// gitPath is where the repository is served on the listener.
const gitPath = "/git"

// ServeGit listens on addr (host.serve) and serves gitDir. public is the
// URL workers reach it by (host.serve_url); "" takes http:// and the
// address it listens on.
func ServeGit(gitDir, addr, public string) (*GitServer, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, err
	}
	token := make([]byte, 32)
	if _, err := rand.Read(token); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("host.serve: %w", err)
	}
	if public == "" {
		public = "http://" + ln.Addr().String()
	}
	s := &GitServer{gitDir: gitDir, token: hex.EncodeToString(token), ln: ln, url: strings.TrimSuffix(public, "/") + gitPath}
	s.cgi = &cgi.Handler{
		Path: git, Root: gitPath, Args: []string{"http-backend"},
		Env: []string{
			"GIT_PROJECT_ROOT=" + gitDir, "GIT_HTTP_EXPORT_ALL=1",
			// Only fetches: never a push, whoever asks.
			"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=http.receivepack", "GIT_CONFIG_VALUE_0=false",
			"GIT_CONFIG_KEY_1=http.getanyfile", "GIT_CONFIG_VALUE_1=false",
		},
		InheritEnv: []string{"PATH", "HOME"},
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is what a worker fetches from.
func (s *GitServer) URL() string { return s.url }

// Token is what a request must carry: Authorization: Bearer <token>.
func (s *GitServer) Token() string { return s.token }

// Header is the header a worker sends with every request.
func (s *GitServer) Header() string { return "Authorization: Bearer " + s.token }

// Close stops serving.
func (s *GitServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return s.srv.Close()
	}
	return err
}

// maxRequest bounds a fetch's request: what the worker wants and has.
const maxRequest = 64 << 20

func (s *GitServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	if subtle.ConstantTimeCompare([]byte(auth), []byte("Bearer "+s.token)) != 1 {
		http.Error(w, "no valid token: this serves the host's repository to its workers, with the token their jobs carry", http.StatusUnauthorized)
		return
	}
	path, ok := strings.CutPrefix(r.URL.Path, gitPath)
	switch {
	case !ok:
	case r.Method == http.MethodGet && path == "/info/refs" && r.URL.Query().Get("service") == "git-upload-pack":
		s.cgi.ServeHTTP(w, r)
		return
	case r.Method == http.MethodPost && path == "/git-upload-pack":
		r.Body = http.MaxBytesReader(w, r.Body, maxRequest)
		s.cgi.ServeHTTP(w, r)
		return
	}
	http.Error(w, "only fetches (git-upload-pack) are served here", http.StatusForbidden)
}

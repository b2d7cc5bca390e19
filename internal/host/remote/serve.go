package remote

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentforeman/foreman/internal/workq"
)

// GitServer serves the host's repository to its workers, read-only (and,
// with an agent's token, takes that agent's pushes: push.go): git's
// smart HTTP (git http-backend, run as a CGI program per request),
// upload-pack only, nothing else of the repository's files, and only to a
// request that carries a job's token. Each job has a token of its own
// (Grant), which shows that job's pinned ref and nothing else of the
// repository (every other ref hidden, and upload-pack gives only what an
// advertised ref reaches), until the job ends (Revoke): a token read
// from one job fetches nothing of another's, nor anything after.
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
	ln     net.Listener
	srv    *http.Server
	url    string
	git    string

	mu          sync.Mutex
	grants      map[[32]byte]grant // by the token's SHA-256
	pushWithout PushWithout
}

// grant is what a token shows, and to whom.
type grant struct {
	ref string
	// job and key, when key is set: a request must carry the signature of
	// workq.FetchSigned(job, token) by key (the worker the job was given
	// to), so that the token alone, read anywhere, fetches nothing.
	job, key string
	// pusher, when set, is the agent whose pushes the token carries
	// (push.go): it fetches nothing.
	pusher string
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
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("host.serve: %w", err)
	}
	if public == "" {
		public = "http://" + ln.Addr().String()
	}
	s := &GitServer{gitDir: gitDir, ln: ln, url: strings.TrimSuffix(public, "/") + gitPath, git: git, grants: map[[32]byte]grant{}}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is what a worker fetches from.
func (s *GitServer) URL() string { return s.url }

// Grant makes a token that shows ref, and only ref, until Revoke: a
// request must carry it as Authorization: Bearer <token>, and, when key
// is given (the key the host trusts the job's worker with), the worker's
// signature of workq.FetchSigned(job, token) in workq.FetchHeader.
func (s *GitServer) Grant(ref, job, key string) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	token := hex.EncodeToString(b)
	s.mu.Lock()
	s.grants[sha256.Sum256([]byte(token))] = grant{ref: ref, job: job, key: key}
	s.mu.Unlock()
	return token
}

// Revoke ends a token: nothing is served with it from now on.
func (s *GitServer) Revoke(token string) {
	s.mu.Lock()
	delete(s.grants, sha256.Sum256([]byte(token)))
	s.mu.Unlock()
}

// Header is the header a request with token sends.
func Header(token string) string { return "Authorization: Bearer " + token }

// backend is git http-backend, showing only refs (each a ref, or a
// prefix of refs: refs/heads).
func (s *GitServer) backend(refs ...string) *cgi.Handler {
	env := []string{
		"GIT_PROJECT_ROOT=" + s.gitDir, "GIT_HTTP_EXPORT_ALL=1",
		"GIT_CONFIG_COUNT=" + strconv.Itoa(5+len(refs)),
		// Only fetches: never a push, whoever asks.
		"GIT_CONFIG_KEY_0=http.receivepack", "GIT_CONFIG_VALUE_0=false",
		"GIT_CONFIG_KEY_1=http.getanyfile", "GIT_CONFIG_VALUE_1=false",
		// A want must be what an advertised ref reaches, never any
		// object by its id; of the refs, those shown alone.
		"GIT_CONFIG_KEY_2=uploadpack.allowAnySHA1InWant", "GIT_CONFIG_VALUE_2=false",
		"GIT_CONFIG_KEY_3=uploadpack.hideRefs", "GIT_CONFIG_VALUE_3=refs/",
		"GIT_CONFIG_KEY_4=uploadpack.hideRefs", "GIT_CONFIG_VALUE_4=HEAD",
	}
	for i, ref := range refs {
		n := strconv.Itoa(5 + i)
		env = append(env, "GIT_CONFIG_KEY_"+n+"=uploadpack.hideRefs", "GIT_CONFIG_VALUE_"+n+"=!"+ref)
	}
	return &cgi.Handler{Path: s.git, Root: gitPath, Args: []string{"http-backend"}, Env: env, InheritEnv: []string{"PATH", "HOME"}}
}

// pushBackend is git http-backend taking agent's pushes: receive-pack,
// shown agent's refs alone and refusing to update any other (a second
// wall behind the gate's own reading of the commands), every object
// checked; the reflog names the agent.
func (s *GitServer) pushBackend(agent string, without PushWithout) *cgi.Handler {
	env := []string{
		"GIT_PROJECT_ROOT=" + s.gitDir, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=" + agent,
		"GIT_CONFIG_COUNT=6",
		"GIT_CONFIG_KEY_0=http.receivepack", "GIT_CONFIG_VALUE_0=true",
		"GIT_CONFIG_KEY_1=http.getanyfile", "GIT_CONFIG_VALUE_1=false",
		"GIT_CONFIG_KEY_2=http.uploadpack", "GIT_CONFIG_VALUE_2=false",
		"GIT_CONFIG_KEY_3=receive.fsckObjects", "GIT_CONFIG_VALUE_3=true",
		"GIT_CONFIG_KEY_4=receive.hideRefs", "GIT_CONFIG_VALUE_4=refs/",
		"GIT_CONFIG_KEY_5=receive.hideRefs", "GIT_CONFIG_VALUE_5=!" + strings.TrimSuffix(pushNamespace(agent), "/"),
	}
	if without.Namespaces {
		env = env[:len(env)-4] // neither wall: every ref shown and taken
		env[3] = "GIT_CONFIG_COUNT=4"
	}
	return &cgi.Handler{Path: s.git, Root: gitPath, Args: []string{"http-backend"}, Env: env, InheritEnv: []string{"PATH", "HOME"}}
}

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
	// Looked up by its hash: the time a lookup takes tells nothing of the
	// tokens that are valid.
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	g, ok := s.grants[sha256.Sum256([]byte(token))]
	without := s.pushWithout
	s.mu.Unlock()
	if !ok {
		http.Error(w, "no valid token: this serves the host's repository to its workers, with the token their jobs carry, while the job lives", http.StatusUnauthorized)
		return
	}
	if g.key != "" && workq.Verify(g.key, workq.FetchSigned(g.job, token), r.Header.Get(workq.FetchHeader)) != nil {
		http.Error(w, "the token is of a job given to another worker: a fetch carries the signature of the worker the job was given to ("+workq.FetchHeader+")", http.StatusForbidden)
		return
	}
	ref := g.ref
	// Protocol v0, never v2: v2's upload-pack gives any object a hidden
	// ref reaches to a want that names it, v0's only what the refs it
	// showed reach.
	r.Header.Del("Git-Protocol")
	path, ok := strings.CutPrefix(r.URL.Path, gitPath)
	if g.pusher != "" && ok {
		s.servePush(w, r, g.pusher, path, without)
		return
	}
	switch {
	case !ok:
	case r.Method == http.MethodGet && path == "/info/refs" && r.URL.Query().Get("service") == "git-upload-pack":
		s.backend(ref).ServeHTTP(w, r)
		return
	case r.Method == http.MethodPost && path == "/git-upload-pack":
		r.Body = http.MaxBytesReader(w, r.Body, maxRequest)
		s.backend(ref).ServeHTTP(w, r)
		return
	}
	http.Error(w, "only fetches (git-upload-pack) are served here", http.StatusForbidden)
}

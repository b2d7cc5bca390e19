package web

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"github.com/agentforeman/foreman/internal/agents"
	"github.com/agentforeman/foreman/internal/nofollow"
)

// agentLogTail is how much of an agent's log the board serves: its end.
const agentLogTail = 1 << 20

// agents is the agents foreman up runs; nil without.
func (s *Server) agents() []agents.Status {
	if s.opts.Agents == nil {
		return nil
	}
	return s.opts.Agents()
}

// notOperator is why a log is refused to a request without an
// operator's session.
const notOperator = "not signed in: an agent's log is an operator's to read; run foreman board-login --identity <an operator's key> and open the URL it prints, then this link again"

// serveAgentLog is /agents/NAME/log: the end of an agent's log, as text.
// Only an agent the supervisor names has one: the path is its, never the
// request's.
//
// Only a signed-in operator reads it. The agents foreman up starts share
// foreman's network (their CLIs need it) and so reach the board: without
// a session, b1 would read b2's output here, which Landlock keeps from it
// in b2's workspace.
func (s *Server) serveAgentLog(w http.ResponseWriter, r *http.Request) {
	if se, code, why := s.operatorOf(r); se == nil {
		switch {
		case why == notSignedIn:
			why = notOperator
		case code == http.StatusForbidden:
			why += ": an agent's log is an operator's to read"
		}
		http.Error(w, why, code)
		return
	}
	name := r.PathValue("name")
	for _, a := range s.agents() {
		if a.Name != name || a.Log == "" {
			continue
		}
		// The agent's directory is foreman's: no link there is followed,
		// and only a regular file is served.
		f, err := nofollow.Open(filepath.Dir(a.Log), filepath.Base(a.Log), os.O_RDONLY)
		if err == nil {
			if info, serr := f.Stat(); serr != nil || !info.Mode().IsRegular() {
				f.Close()
				err = fmt.Errorf("%s is not a regular file", a.Log)
			}
		}
		if err != nil {
			http.Error(w, fmt.Sprintf("agent %s has no log yet", name), http.StatusNotFound)
			return
		}
		defer f.Close()
		if info, err := f.Stat(); err == nil && info.Size() > agentLogTail {
			_, _ = f.Seek(info.Size()-agentLogTail, io.SeekStart)
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-store") // an operator's: kept in no cache
		_, _ = io.Copy(w, io.LimitReader(f, agentLogTail))
		return
	}
	http.Error(w, fmt.Sprintf("no agent %q here (foreman up runs the agents of its config's agents: and --agents)", name), http.StatusNotFound)
}

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

// serveAgentLog is /agents/NAME/log: the end of an agent's log, as text.
// Only an agent the supervisor names has one: the path is its, never the
// request's.
func (s *Server) serveAgentLog(w http.ResponseWriter, r *http.Request) {
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
		_, _ = io.Copy(w, io.LimitReader(f, agentLogTail))
		return
	}
	http.Error(w, fmt.Sprintf("no agent %q here (foreman up runs the agents of its config's agents: and --agents)", name), http.StatusNotFound)
}

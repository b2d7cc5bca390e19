package web

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/agents"
	"github.com/agentforeman/foreman/internal/pool"
	"github.com/agentforeman/foreman/protocol"
)

// Board is everything the board shows: /api/view's body and each event of
// the live stream. A stream sends the whole board first; after that an
// event may be an update (Update set), which carries the view without its
// components, only the components that changed since the viewer's last
// event (Changed), and no layout: the graph is the same.
type Board struct {
	Now         time.Time                   `json:"now"` // the server's clock: count deadlines down from here
	View        *coordinator.View           `json:"view,omitempty"`
	Problem     string                      `json:"problem,omitempty"` // why there is no view, or why it is stale
	Stale       bool                        `json:"stale,omitempty"`   // View is the last one the bot gave: it has stopped answering
	Health      HealthReport                `json:"health"`
	Room        RoomStats                   `json:"room"`
	Layout      *Layout                     `json:"layout,omitempty"`
	Escalations map[string]Escalation       `json:"escalations,omitempty"` // the open ones, by component (or "build")
	Log         []Entry                     `json:"log"`
	LogSeq      uint64                      `json:"log_seq"`           // the latest line's seq
	Full        bool                        `json:"full"`              // Log holds every line kept, not only those after the client's last
	Names       map[string]string           `json:"names,omitempty"`   // display names by sender id; in a stream, only those new since the viewer's last event
	Self        string                      `json:"self,omitempty"`    // foreman's own sender id
	Members     *[]Member                   `json:"members,omitempty"` // who is in the channel; in a stream, only when it changed since the viewer's last event
	Update      bool                        `json:"update,omitempty"`
	Changed     []coordinator.ComponentView `json:"changed,omitempty"`         // in an update: the components whose view changed, in view order
	Cluster     []pool.Lead                 `json:"cluster,omitempty"`         // in a cluster: who leads which build
	HostLogs    bool                        `json:"host_logs,omitempty"`       // the board serves foreman host's logs at ci/logs/ (a line's log=<path> links there)
	Agents      []agents.Status             `json:"agent_processes,omitempty"` // the agents foreman up runs, each log at agents/NAME/log
}

// RoomStats are the room connection's counters.
type RoomStats struct {
	MessagesSent int64 `json:"messages_sent"`
	LinesSent    int64 `json:"lines_sent"`
	Resent       int64 `json:"resent"`
	Reconnects   int64 `json:"reconnects"`
	Queued       int   `json:"queued"`
}

func roomStats(src Source) RoomStats {
	if src == nil {
		return RoomStats{}
	}
	st := src.RoomStats()
	return RoomStats{MessagesSent: st.MessagesSent, LinesSent: st.LinesSent, Resent: st.Resent,
		Reconnects: st.Reconnects, Queued: st.Queued}
}

// viewTimeout bounds the wait for the bot's View: a stopped bot never
// answers, and the board should then say so.
const viewTimeout = 2 * time.Second

// wholeBoard is the board with a view asked for now (so that /api/view
// never shows a copy that went stale), and every log line kept.
func (s *Server) wholeBoard(ctx context.Context) Board {
	return s.boardOf(ctx, want{gen: s.generation(), asked: time.Now()})
}

// boardOf is the whole board from a snapshot that meets w.
func (s *Server) boardOf(ctx context.Context, w want) Board {
	sn := s.snapshotFor(ctx, w)
	b := Board{Now: s.opts.Now().UTC(), View: sn.view, Problem: sn.problem, Stale: sn.stale,
		Layout: sn.layout, Escalations: sn.escalations, Full: true}
	src := s.source()
	b.Health = healthOf(src, b.Now)
	b.Room = s.roomStats(src)
	b.Cluster = s.cluster()
	b.Agents = s.agents()
	b.HostLogs = s.opts.HostLogs != ""
	s.mu.Lock()
	b.Log = append([]Entry{}, s.log.since(0)...)
	b.LogSeq = s.log.seq
	b.Names, _ = s.names.since(0)
	if s.room.fed {
		members := s.room.list()
		b.Members, b.Self = &members, s.room.self
	}
	s.mu.Unlock()
	return b
}

// openEscalations keeps the escalations the view still shows open, so that
// a resolved one does not linger on the board.
func openEscalations(v coordinator.View, said map[string]Escalation) map[string]Escalation {
	out := map[string]Escalation{}
	for _, c := range v.Components {
		code, _, _ := strings.Cut(c.Escalation, ":")
		if code == "" {
			continue
		}
		if e, ok := said[c.Name]; ok && e.Code == code {
			out[c.Name] = e
		} else {
			// Said before a restart: the code is all that is known.
			out[c.Name] = Escalation{Code: code}
		}
	}
	if e, ok := said[protocol.BuildSubject]; ok && (e.Code == string(protocol.Overtime) && v.Overtime || e.Code == string(protocol.Cycle) && len(v.Halted) > 0) {
		out[protocol.BuildSubject] = e
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func (s *Server) serveView(w http.ResponseWriter, r *http.Request) {
	b := s.wholeBoard(r.Context())
	code := http.StatusOK
	if b.View == nil || b.Stale {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, b)
}

// cluster is who leads which build, in a cluster; nil alone.
func (s *Server) cluster() []pool.Lead {
	if s.opts.Cluster == nil {
		return nil
	}
	return s.opts.Cluster()
}

// serveCluster is /api/cluster: who leads which build, as this process
// sees it (404 when foreman runs alone).
func (s *Server) serveCluster(w http.ResponseWriter, r *http.Request) {
	if s.opts.Cluster == nil {
		http.Error(w, "foreman runs alone here: no cluster", http.StatusNotFound)
		return
	}
	writeJSON(w, http.StatusOK, s.cluster())
}

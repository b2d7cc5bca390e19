package web

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/protocol"
)

// Board is everything the board shows: /api/view's body and each event of
// the live stream.
type Board struct {
	Now         time.Time             `json:"now"` // the server's clock: count deadlines down from here
	View        *coordinator.View     `json:"view,omitempty"`
	Problem     string                `json:"problem,omitempty"` // why there is no view, or why it is stale
	Stale       bool                  `json:"stale,omitempty"`   // View is the last one the bot gave: it has stopped answering
	Health      HealthReport          `json:"health"`
	Room        RoomStats             `json:"room"`
	Layout      *Layout               `json:"layout,omitempty"`
	Escalations map[string]Escalation `json:"escalations,omitempty"` // the open ones, by component (or the build's name)
	Log         []Entry               `json:"log"`
	LogSeq      uint64                `json:"log_seq"` // the latest line's seq
	Full        bool                  `json:"full"`    // Log holds every line kept, not only those after the client's last
}

// RoomStats are the room connection's counters.
type RoomStats struct {
	MessagesSent int64 `json:"messages_sent"`
	LinesSent    int64 `json:"lines_sent"`
	Resent       int64 `json:"resent"`
	Reconnects   int64 `json:"reconnects"`
	Queued       int   `json:"queued"`
}

// viewTimeout bounds the wait for the bot's View: a stopped bot never
// answers, and the board should then say so.
const viewTimeout = 2 * time.Second

// board gathers the board, with the log lines after since (all of them when
// since is 0).
func (s *Server) board(ctx context.Context, since uint64) Board {
	b := Board{Now: s.opts.Now().UTC(), Log: []Entry{}, Full: since == 0}
	src := s.source()
	b.Health = healthOf(src, b.Now)
	var esc map[string]Escalation
	s.mu.Lock()
	b.Log = append(b.Log, s.log.since(since)...)
	b.LogSeq = s.log.seq
	if len(s.esc) > 0 {
		esc = make(map[string]Escalation, len(s.esc))
		for k, v := range s.esc {
			esc[k] = v
		}
	}
	s.mu.Unlock()
	if src == nil {
		b.Problem = "foreman is starting"
		return b
	}
	st := src.RoomStats()
	b.Room = RoomStats{MessagesSent: st.MessagesSent, LinesSent: st.LinesSent, Resent: st.Resent,
		Reconnects: st.Reconnects, Queued: st.Queued}
	ctx, cancel := context.WithTimeout(ctx, viewTimeout)
	defer cancel()
	v, err := src.View(ctx)
	if err != nil {
		b.Problem = "the bot did not answer: " + err.Error()
		// A stopped bot's last board is still worth showing (the end of
		// a demo, a crash): marked stale, never passed off as current.
		last := s.lastView.Load()
		if last == nil {
			return b
		}
		v, b.Stale = *last, true
		b.Problem = "foreman is not answering (stopped?); this is the last board it gave"
	} else {
		s.keepView(v)
	}
	b.View = &v
	b.Layout = arrange(v.Components)
	b.Escalations = openEscalations(v, esc)
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
	b := s.board(r.Context(), 0)
	code := http.StatusOK
	if b.View == nil || b.Stale {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, b)
}

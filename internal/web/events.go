package web

import (
	"errors"
	"net/http"
	"time"

	"github.com/agentforeman/foreman/internal/agents"
	"github.com/agentforeman/foreman/internal/pool"
)

// minEventGap keeps a burst of room traffic to a few board updates a
// second: each update asks the bot for its View. A variable only so that
// a benchmark can measure the work without the pause.
var minEventGap = 100 * time.Millisecond

// eventWriteTimeout drops a viewer that stopped reading.
const eventWriteTimeout = 10 * time.Second

// serveEvents streams the board as Server-Sent Events: the whole board at
// once, then after every change (and every Refresh) an update with only
// what changed since the viewer's last event (see Board). A viewer whose
// connection drops reconnects by itself (EventSource) and gets the whole
// board again.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // a proxy in front must not hold events back
	w.WriteHeader(http.StatusOK)

	ctx := r.Context()
	send := func(frame []byte) bool {
		if err := rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return false
		}
		if _, err := w.Write(frame); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send([]byte("retry: 2000\n\n")) {
		return
	}
	refresh := time.NewTicker(s.opts.Refresh)
	defer refresh.Stop()
	var vw viewer
	// A new viewer gets a view asked for now, as /api/view does.
	need := want{gen: s.generation(), asked: time.Now()}
	for {
		changed := s.watch() // before reading, so a change during the read is not missed
		sn := s.snapshotFor(ctx, need)
		if ctx.Err() != nil {
			return
		}
		if !send(s.event(sn, &vw)) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
			need = want{gen: s.generation()}
		case <-refresh.C:
			// Changes the bot does not signal (a pause after a restart
			// shifts every deadline) show within a refresh; all the
			// viewers' refreshes share a view asked for in the last half.
			need = want{gen: s.generation(), asked: time.Now().Add(-s.opts.Refresh / 2)}
		}
		gap := time.NewTimer(minEventGap)
		select {
		case <-ctx.Done():
			gap.Stop()
			return
		case <-gap.C:
		}
	}
}

// viewer is what one live viewer has been sent.
type viewer struct {
	seq, graph uint64 // the snapshot its view is of, and that snapshot's graph; 0 before the first event
	log        uint64 // the latest log line
	names      uint64 // the latest name
	members    uint64 // the member list's change count when it was last sent
	sentRoom   bool   // the member list was sent at all
}

// event encodes the next event for vw from sn: the whole board the first
// time and whenever the graph changed, else an update. What every viewer
// shares comes encoded from the snapshot; only the clock, health, log lines
// and names are encoded per viewer, and they are small.
func (s *Server) event(sn *snapshot, vw *viewer) []byte {
	now := s.opts.Now().UTC()
	src := s.source()
	mine := struct {
		Now     time.Time         `json:"now"`
		Health  HealthReport      `json:"health"`
		Room    RoomStats         `json:"room"`
		Log     []Entry           `json:"log"`
		LogSeq  uint64            `json:"log_seq"`
		Full    bool              `json:"full"`
		Names   map[string]string `json:"names,omitempty"`
		Self    string            `json:"self,omitempty"`
		Members *[]Member         `json:"members,omitempty"`
		Update  bool              `json:"update,omitempty"`
		Lead    []pool.Lead       `json:"cluster,omitempty"`
		Logs    bool              `json:"host_logs,omitempty"`
		Agents  []agents.Status   `json:"agent_processes,omitempty"`
	}{Now: now, Health: healthOf(src, now), Room: s.roomStats(src), Full: vw.log == 0, Lead: s.cluster(), Logs: s.opts.HostLogs != "", Agents: s.agents()}
	s.mu.Lock()
	mine.Log = append([]Entry{}, s.log.since(vw.log)...)
	mine.LogSeq = s.log.seq
	mine.Names, vw.names = s.names.since(vw.names)
	if s.room.fed && (!vw.sentRoom || vw.members != s.room.seq) {
		members := s.room.list()
		mine.Members, mine.Self = &members, s.room.self
		vw.members, vw.sentRoom = s.room.seq, true
	}
	s.mu.Unlock()
	vw.log = mine.LogSeq

	var changed []int
	if vw.seq != 0 {
		changed, mine.Update = sn.changedSince(vw.seq, vw.graph)
	}
	own := mustJSON(&mine)

	size := len(own) + len(sn.head) + 64
	if mine.Update {
		size += len(sn.viewHead)
		for _, i := range changed {
			size += len(sn.comps[i]) + 1
		}
	} else {
		size += len(sn.wholeView())
	}
	b := make([]byte, 0, size)
	b = append(b, "event: board\ndata: {"...)
	b = appendMembers(b, own)
	b = appendMembers(b, sn.head)
	switch {
	case mine.Update:
		b = append(b, `,"view":`...)
		b = append(b, sn.viewHead...)
		b = append(b, `},"changed":`...)
		b = appendSome(b, sn.comps, changed)
	default:
		b = appendMembers(b, sn.wholeView())
	}
	// JSON holds no raw newline, so one data line suffices.
	b = append(b, "}\n\n"...)
	vw.seq, vw.graph = sn.seq, sn.graph
	return b
}

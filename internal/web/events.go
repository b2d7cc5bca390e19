package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// minEventGap keeps a burst of room traffic to a few board updates a
// second: each update asks the bot for its View. A variable only so that
// a benchmark can measure the work without the pause.
var minEventGap = 100 * time.Millisecond

// eventWriteTimeout drops a viewer that stopped reading.
const eventWriteTimeout = 10 * time.Second

// serveEvents streams the board as Server-Sent Events: the whole board at
// once, then again after every change (and every Refresh), each time with
// only the log lines the viewer has not had. A viewer whose connection
// drops reconnects by itself (EventSource) and gets the whole board again.
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
	var seen uint64
	for {
		changed := s.watch() // before reading, so a change during the read is not missed
		b := s.board(ctx, seen)
		if ctx.Err() != nil {
			return
		}
		data, err := json.Marshal(b)
		if err != nil {
			s.opts.Logger.Error().Err(err).Msg("board: cannot encode the board")
			return
		}
		frame := make([]byte, 0, len(data)+32)
		frame = append(frame, "event: board\ndata: "...)
		frame = append(frame, data...) // JSON holds no raw newline, so one data line suffices
		frame = append(frame, "\n\n"...)
		if !send(frame) {
			return
		}
		seen = b.LogSeq
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-refresh.C:
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

package web

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/agentforeman/foreman/internal/bot"
)

// HealthReport is /healthz's body. Healthy means foreman is in the room
// and its journal takes writes; the age of the last event is reported, not
// judged, since a quiet room is not a fault.
type HealthReport struct {
	Healthy             bool      `json:"healthy"`
	Problems            []string  `json:"problems,omitempty"`
	Connected           bool      `json:"connected"`
	Joined              bool      `json:"joined"`
	JournalOK           bool      `json:"journal_ok"`
	JournalError        string    `json:"journal_error,omitempty"`
	LastEvent           time.Time `json:"last_event,omitzero"`
	LastEventAgeSeconds *float64  `json:"last_event_age_seconds,omitempty"`
	Queued              int       `json:"queued"`
}

func healthOf(src Source, now time.Time) HealthReport {
	if src == nil {
		return HealthReport{Problems: []string{"starting: no bot attached yet"}}
	}
	return reportHealth(src.Health(), now)
}

func reportHealth(h bot.Health, now time.Time) HealthReport {
	r := HealthReport{
		Connected: h.Connected, Joined: h.Joined,
		JournalOK: h.JournalErr == "", JournalError: h.JournalErr,
		LastEvent: h.LastEvent, Queued: h.Queued,
	}
	if !h.LastEvent.IsZero() {
		age := max(0, now.Sub(h.LastEvent)).Seconds()
		r.LastEventAgeSeconds = &age
	}
	switch {
	case !h.Connected:
		r.Problems = append(r.Problems, "not connected to the room")
	case !h.Joined:
		r.Problems = append(r.Problems, "connected, but not in the channel yet")
	}
	if h.JournalErr != "" {
		r.Problems = append(r.Problems, "journal: "+h.JournalErr)
	}
	r.Healthy = len(r.Problems) == 0
	return r
}

func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	rep := healthOf(s.source(), s.opts.Now())
	code := http.StatusOK
	if !rep.Healthy {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, rep)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away; nothing to do
}

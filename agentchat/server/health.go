package server

import (
	"encoding/json"
	"net/http"
	"time"
)

// serveHTTP answers a plain HTTP request on the chat port as a stock
// server does: GET /health with the server's state, 401 for the admin's
// connection list (there is no admin key here), 404 for anything else.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	get := r.Method == http.MethodGet
	switch {
	case get && r.RequestURI == "/health":
		writeJSON(w, http.StatusOK, s.Health())
	case get && r.RequestURI == "/api/connections":
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "Unauthorized"})
	default:
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte("Not Found"))
	}
}

// Health is what GET /health answers, with a stock server's fields.
type Health struct {
	Status        string         `json:"status"`
	Server        string         `json:"server"`
	Version       string         `json:"version"`
	UptimeSeconds int64          `json:"uptime_seconds"`
	StartedAt     string         `json:"started_at"`
	Agents        HealthAgents   `json:"agents"`
	Channels      HealthChannels `json:"channels"`
	// Proposals are not hosted here: always none.
	Proposals HealthProposals `json:"proposals"`
	Timestamp string          `json:"timestamp"`
}

// HealthAgents counts the agents signed in, and those with a key.
type HealthAgents struct {
	Connected    int `json:"connected"`
	WithIdentity int `json:"with_identity"`
}

// HealthChannels counts the channels; every channel here is public (no
// invite-only channels).
type HealthChannels struct {
	Total  int `json:"total"`
	Public int `json:"public"`
}

// HealthProposals is a stock server's proposal count.
type HealthProposals struct {
	Total    int            `json:"total"`
	ByStatus map[string]int `json:"byStatus"`
	Agents   int            `json:"agents"`
}

// Health reports the server's state.
func (s *Server) Health() Health {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	h := Health{
		Status:        "healthy",
		Server:        s.cfg.Name,
		Version:       s.cfg.Version,
		UptimeSeconds: int64(now.Sub(s.started) / time.Second),
		StartedAt:     isoTime(s.started),
		Channels:      HealthChannels{Total: len(s.st.channels), Public: len(s.st.channels)},
		Proposals:     HealthProposals{ByStatus: map[string]int{}},
		Timestamp:     isoTime(now),
	}
	for c := range s.conns {
		if a := c.agent; a != nil && !c.gone {
			h.Agents.Connected++
			if a.pubkey != "" {
				h.Agents.WithIdentity++
			}
		}
	}
	return h
}

// isoTime is t as JavaScript's toISOString writes it.
func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain values go in
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(data)
}

package journal

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/node"
)

// record is an entry as stored: JSON with short keys and times in Unix
// milliseconds, the room's own resolution. It is the one place the log's
// format is written down.
type record struct {
	I       uint64                  `json:"i"`
	K       coordinator.Kind        `json:"k,omitempty"`
	T       int64                   `json:"t,omitempty"`
	ID      string                  `json:"id,omitempty"`
	From    string                  `json:"f,omitempty"`
	Name    string                  `json:"n,omitempty"`
	V       bool                    `json:"v,omitempty"`
	C       string                  `json:"c,omitempty"`
	Comps   []coordinator.Component `json:"comps,omitempty"`
	Roles   *coordinator.Roles      `json:"roles,omitempty"`
	Seen    []string                `json:"seen,omitempty"`
	Inst    string                  `json:"inst,omitempty"`
	Since   int64                   `json:"s,omitempty"`
	Until   int64                   `json:"u,omitempty"`
	Members []member                `json:"m,omitempty"`
	Confirm *node.Confirm           `json:"conf,omitempty"`
	Spend   *spend                  `json:"sp,omitempty"`
}

// spend is a coordinator.Spend as stored: a flood of small exports makes
// many, so its keys are short too. Times are Unix milliseconds.
type spend struct {
	A      string                  `json:"a"`
	Src    coordinator.SpendSource `json:"src"`
	T      int64                   `json:"t,omitempty"`
	Series string                  `json:"s,omitempty"`
	Start  int64                   `json:"st,omitempty"`
	ID     string                  `json:"id,omitempty"`
	USD    int64                   `json:"usd,omitempty"` // micro-dollars
	Tok    int64                   `json:"tok,omitempty"`
}

// member is a coordinator.Member as stored: a member list may hold
// thousands, so its keys are short too.
type member struct {
	ID string `json:"i"`
	N  string `json:"n,omitempty"`
	V  bool   `json:"v,omitempty"`
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

func encodeEntry(e node.Entry) ([]byte, error) {
	r := record{I: e.Index, Confirm: e.Confirm}
	if ev := e.Event; ev != nil {
		r.K, r.T = ev.Kind, ms(ev.At)
		r.ID, r.From, r.Name, r.V, r.C = ev.Msg.ID, ev.Msg.From, ev.Msg.Name, ev.Msg.Verified, ev.Msg.Content
		r.Comps, r.Roles, r.Seen, r.Inst = ev.Components, ev.Roles, ev.Seen, ev.Instance
		r.Since, r.Until = ms(ev.Since), ms(ev.Until)
		for _, m := range ev.Members {
			r.Members = append(r.Members, member{ID: m.ID, N: m.Name, V: m.Verified})
		}
		if ev.Kind == coordinator.KindSpend {
			s := ev.Spend
			r.Spend = &spend{A: s.Agent, Src: s.Source, T: ms(s.At), Series: s.Series, Start: ms(s.Start), ID: s.ID, USD: s.Cost.USD, Tok: s.Cost.Tokens}
		}
	}
	return json.Marshal(r)
}

func decodeEntry(data []byte) (node.Entry, error) {
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		return node.Entry{}, err
	}
	e := node.Entry{Index: r.I, Confirm: r.Confirm}
	if r.K != 0 {
		if !r.K.Valid() {
			return e, errors.New("an event of an unknown kind")
		}
		at := fromMS(r.T)
		e.Event = &coordinator.Event{Kind: r.K, At: at, Components: r.Comps, Roles: r.Roles, Seen: r.Seen, Instance: r.Inst,
			Since: fromMS(r.Since), Until: fromMS(r.Until)}
		for _, m := range r.Members {
			e.Event.Members = append(e.Event.Members, coordinator.Member{ID: m.ID, Name: m.N, Verified: m.V})
		}
		if r.K == coordinator.KindSpend && r.Spend != nil {
			s := r.Spend
			e.Event.Spend = coordinator.Spend{Agent: s.A, Source: s.Src, At: fromMS(s.T), Series: s.Series, Start: fromMS(s.Start), ID: s.ID,
				Cost: coordinator.Cost{USD: s.USD, Tokens: s.Tok}}
		}
		if r.K == coordinator.KindMessage {
			e.Event.Msg = coordinator.Message{ID: r.ID, From: r.From, Name: r.Name, Verified: r.V, At: at, Content: r.C}
		}
	}
	if (e.Event == nil) == (e.Confirm == nil) {
		return e, errors.New("a record that is neither an event nor a confirmation")
	}
	return e, nil
}

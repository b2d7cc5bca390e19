package server

import (
	"encoding/json"
	"time"
)

// Floor control (RESPONDING_TO): an agent about to answer a message says
// so, with the time it started thinking; of the agents answering the same
// message in the same channel the earliest start holds the floor and the
// others are told to yield. It is advice: nobody is stopped from sending.

// floorTTL is how long a claim holds without a message from its holder,
// as on a stock server.
const floorTTL = 45 * time.Second

type floorKey struct{ channel, msgID string }

type floorClaim struct {
	agent      string // agent id, with its @
	started    float64
	startedRaw json.RawMessage // as the agent wrote it, to pass on
	expires    time.Time
}

// floor holds the claims; under the server's lock.
type floor map[floorKey]floorClaim

// claim records agent's claim on key. It returns whether the claim is
// granted, and the claim that now stands in its way (refused) or that it
// displaced (granted), if any.
func (f floor) claim(key floorKey, mine floorClaim, now time.Time) (granted bool, other *floorClaim) {
	mine.expires = now.Add(floorTTL)
	agent, started := mine.agent, mine.started
	held, ok := f[key]
	if !ok || !now.Before(held.expires) {
		f[key] = mine
		return true, nil
	}
	// The earlier start wins; a tie goes to the smaller id. Holding the
	// floor already and claiming again is refused, as on a stock server.
	if started < held.started || started == held.started && agent < held.agent {
		f[key] = mine
		return true, &held
	}
	return false, &held
}

// release drops agent's claims in channel, or everywhere when channel is "".
func (f floor) release(agent, channel string) {
	for k, c := range f {
		if c.agent == agent && (channel == "" || k.channel == channel) {
			delete(f, k)
		}
	}
}

func (s *Server) respondingTo(c *conn, r raw) {
	a := c.agent
	name, _ := r.str("channel")
	ch := s.st.channels[name]
	if a == nil || ch == nil {
		return // dropped without a word, as on a stock server
	}
	msgID, _ := r.str("msg_id")
	mine := floorClaim{agent: a.id, startedRaw: r["started_at"]}
	json.Unmarshal(mine.startedRaw, &mine.started) // check made sure it is a number
	granted, other := s.floor.claim(floorKey{name, msgID}, mine, time.Now())
	if !granted {
		c.send(frame("YIELD", fields{
			"msg_id": msgID, "channel": name, "holder": other.agent,
			"holder_started_at": other.startedRaw, "reason": "Another agent claimed first",
		}))
		return
	}
	claimed := frame("FLOOR_CLAIMED", fields{
		"msg_id": msgID, "channel": name, "holder": a.id, "holder_name": a.name, "started_at": mine.startedRaw,
	})
	for _, mc := range s.members(ch) {
		if mc != c {
			mc.send(claimed)
		}
	}
	if other != nil {
		if oc := s.byID[other.agent]; oc != nil {
			oc.send(frame("YIELD", fields{
				"msg_id": msgID, "channel": name, "holder": a.id,
				"holder_started_at": mine.startedRaw, "reason": "Earlier started_at timestamp",
			}))
		}
	}
}

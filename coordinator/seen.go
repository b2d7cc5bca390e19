package coordinator

// seenWindow is how many message ids the engine remembers. A room replays
// only its last few messages on join (20 on a stock AgentChat server), so a
// window far larger than that catches every replayed message.
const seenWindow = 4096

// seenIDs remembers the most recent message ids, so a message replayed by
// the room after a reconnect or restart is handled once (contract section 1).
type seenIDs struct {
	ring []string
	next int
	set  map[string]struct{}
}

func newSeenIDs(n int) seenIDs {
	return seenIDs{ring: make([]string, 0, n), set: make(map[string]struct{}, n)}
}

// add records id and reports whether it was new.
func (s *seenIDs) add(id string) bool {
	if _, ok := s.set[id]; ok {
		return false
	}
	if len(s.ring) < cap(s.ring) {
		s.ring = append(s.ring, id)
	} else {
		delete(s.set, s.ring[s.next])
		s.ring[s.next] = id
		s.next = (s.next + 1) % len(s.ring)
	}
	s.set[id] = struct{}{}
	return true
}

func (s *seenIDs) has(id string) bool {
	_, ok := s.set[id]
	return ok
}

// ids returns the remembered ids, oldest first.
func (s *seenIDs) ids() []string {
	out := make([]string, 0, len(s.ring))
	out = append(out, s.ring[s.next:]...)
	return append(out, s.ring[:s.next]...)
}

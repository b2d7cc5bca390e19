package agentchat

// recent remembers the last n keys added, to tell which replayed messages
// were already delivered. The server replays at most its buffer (20 frames
// by default), so a few thousand keys are far more than enough.
type recent struct {
	keys []string
	next int
	set  map[string]struct{}
}

func newRecent(n int) *recent {
	return &recent{keys: make([]string, n), set: make(map[string]struct{}, n)}
}

func (r *recent) has(key string) bool {
	_, ok := r.set[key]
	return ok
}

func (r *recent) add(key string) {
	if r.has(key) {
		return
	}
	if old := r.keys[r.next]; old != "" {
		delete(r.set, old)
	}
	r.keys[r.next] = key
	r.next = (r.next + 1) % len(r.keys)
	r.set[key] = struct{}{}
}

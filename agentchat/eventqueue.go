package agentchat

import (
	"context"
	"sync"
)

// eventQueue hands events to the caller without ever blocking the
// connection (a reader stalled on a slow consumer would stop answering the
// server's pings and be cut off), and hands over everything queued at
// once: a busy room's events arrive faster than one at a time.
type eventQueue struct {
	out    chan []Event
	mu     sync.Mutex
	items  []Event
	signal chan struct{}
	done   bool
}

func newEventQueue() *eventQueue {
	return &eventQueue{out: make(chan []Event), signal: make(chan struct{}, 1)}
}

func (q *eventQueue) push(e Event) {
	q.mu.Lock()
	q.items = append(q.items, e)
	q.mu.Unlock()
	q.poke()
}

// finish lets pump close out once everything pushed so far is delivered.
func (q *eventQueue) finish() {
	q.mu.Lock()
	q.done = true
	q.mu.Unlock()
	q.poke()
}

func (q *eventQueue) poke() {
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// pump delivers what is queued, in order, as one batch each time the
// consumer is ready, until finish; then it closes out. When ctx ends nobody
// is reading any more, so what is left is dropped.
func (q *eventQueue) pump(ctx context.Context) {
	defer close(q.out)
	for {
		q.mu.Lock()
		items, done := q.items, q.done
		q.items = nil
		q.mu.Unlock()
		if len(items) > 0 {
			select {
			case q.out <- items:
			case <-ctx.Done():
				return
			}
			continue
		}
		if done {
			return
		}
		select {
		case <-q.signal:
		case <-ctx.Done():
			return
		}
	}
}

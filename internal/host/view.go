package host

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// QueueView is the queue as foreman status and the board show it.
type QueueView struct {
	At          time.Time   `json:"at"`
	Target      string      `json:"target"`
	MaxParallel int         `json:"max_parallel"`
	Running     []QueueItem `json:"running"`
	Waiting     []QueueItem `json:"waiting"`
	Recent      []Verdict   `json:"recent"`
}

// QueueItem is one job in the queue.
type QueueItem struct {
	Run       int       `json:"run"`
	Kind      string    `json:"kind"`
	Component string    `json:"c"`
	Ref       string    `json:"ref"`
	Owner     string    `json:"owner,omitempty"`
	Queued    time.Time `json:"queued"`
	Started   time.Time `json:"started,omitzero"`
	NotBefore time.Time `json:"not_before,omitzero"` // a retry waits until then
	Why       string    `json:"why,omitempty"`       // why it is retried
}

// Queue is a view of the queue now.
func (h *Core) Queue() QueueView {
	v := QueueView{At: h.now, Target: h.cfg.Target, MaxParallel: h.cfg.MaxParallel,
		Running: []QueueItem{}, Waiting: []QueueItem{}, Recent: append([]Verdict{}, h.recent...)}
	for _, r := range h.running {
		v.Running = append(v.Running, item(r))
	}
	sort.Slice(v.Running, func(i, j int) bool { return v.Running[i].Run < v.Running[j].Run })
	for _, r := range h.order {
		v.Waiting = append(v.Waiting, item(r))
	}
	return v
}

func item(r *run) QueueItem {
	return QueueItem{Run: r.Run, Kind: r.Kind.String(), Component: r.Component, Ref: r.Ref, Owner: r.Owner,
		Queued: r.queued, Started: r.started, NotBefore: r.notBefore, Why: r.said}
}

// answerStatus answers STATUS in the room with one chat line on the queue
// (foreman answers with the board): for STATUS c, where c is in the queue,
// if it is; for STATUS, the whole queue, at most once per 10 seconds.
func (h *Core) answerStatus(name string) {
	if name != "" {
		if line := h.queueLine(name); line != "" {
			h.say(line)
		}
		return
	}
	if !h.queueSaid.IsZero() && h.now.Sub(h.queueSaid) < 10*time.Second {
		return
	}
	h.queueSaid = h.now
	h.say(h.queueSummary())
}

func (h *Core) queueLine(name string) string {
	c := h.comps[name]
	if c == nil || c.run == nil {
		return ""
	}
	r := c.run
	if !r.started.IsZero() {
		return fmt.Sprintf("queue: %s %s of %s running for %s", name, r.Kind, r.Ref, age(h.now.Sub(r.started)))
	}
	for i, q := range h.order {
		if q == r {
			s := fmt.Sprintf("queue: %s %s of %s waiting, %d of %d", name, r.Kind, r.Ref, i+1, len(h.order))
			if r.notBefore.After(h.now) {
				s += fmt.Sprintf(", retried in %s: %s", age(r.notBefore.Sub(h.now)), r.said)
			}
			return s
		}
	}
	return ""
}

func (h *Core) queueSummary() string {
	v := h.Queue()
	if len(v.Running)+len(v.Waiting) == 0 {
		return fmt.Sprintf("queue: empty; max_parallel %d", v.MaxParallel)
	}
	var run, wait []string
	for _, it := range v.Running {
		run = append(run, fmt.Sprintf("%s %s %s", it.Component, it.Kind, age(h.now.Sub(it.Started))))
	}
	for _, it := range v.Waiting {
		s := it.Component
		if it.Kind == Land.String() {
			s += " (land)"
		}
		wait = append(wait, s)
	}
	line := fmt.Sprintf("queue: %d running", len(run))
	if len(run) > 0 {
		line += " (" + strings.Join(run, ", ") + ")"
	}
	line += fmt.Sprintf(", %d waiting", len(wait))
	if len(wait) > 0 {
		line += " (" + strings.Join(wait, ", ") + ")"
	}
	return bound(line+fmt.Sprintf("; max_parallel %d", v.MaxParallel), 400)
}

func age(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return d.Round(time.Second).String()
}

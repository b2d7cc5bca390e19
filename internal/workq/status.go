package workq

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// SayWorker stores what a worker says of itself.
func (q *Queue) SayWorker(ctx context.Context, s WorkerStatus) error {
	return q.say(ctx, workerKey(s.ID), s)
}

// WorkerGone drops a worker that stops.
func (q *Queue) WorkerGone(ctx context.Context, id string) { q.unsay(ctx, workerKey(id)) }

// SayHost stores what a host with workers says of itself.
func (q *Queue) SayHost(ctx context.Context, s HostStatus) error {
	return q.say(ctx, hostKey(s.Build), s)
}

// HostGone drops a host that stops.
func (q *Queue) HostGone(ctx context.Context, build string) { q.unsay(ctx, hostKey(build)) }

// say puts v under key of WorkerBucket, as KV's Put does, without a KV
// handle (that reads the stream's information, which a worker may not).
func (q *Queue) say(ctx context.Context, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = q.js.Publish(ctx, "$KV."+WorkerBucket+"."+key, data)
	return err
}

// unsay deletes key of WorkerBucket, as KV's Delete does.
func (q *Queue) unsay(ctx context.Context, key string) {
	m := nats.NewMsg("$KV." + WorkerBucket + "." + key)
	m.Header.Set("KV-Operation", "DEL")
	_, _ = q.js.PublishMsg(ctx, m)
}

// Backlog is the jobs given to one worker in the queue: waiting for it,
// or in its hands.
type Backlog struct {
	Worker string
	Queued uint64
}

// Status is every worker and host with workers, and the queue's backlog
// by label set: what foreman cluster status shows.
func (q *Queue) Status(ctx context.Context) ([]WorkerStatus, []HostStatus, []Backlog, error) {
	var workers []WorkerStatus
	var hosts []HostStatus
	keys, err := q.status.ListKeys(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	for k := range keys.Keys() {
		e, err := q.status.Get(ctx, k)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(k, "w."):
			var w WorkerStatus
			if json.Unmarshal(e.Value(), &w) == nil {
				w.Seen = e.Created()
				workers = append(workers, w)
			}
		case strings.HasPrefix(k, "h."):
			var h HostStatus
			if json.Unmarshal(e.Value(), &h) == nil {
				h.Seen = e.Created()
				hosts = append(hosts, h)
			}
		}
	}
	sort.Slice(workers, func(i, j int) bool { return workers[i].ID < workers[j].ID })
	sort.Slice(hosts, func(i, j int) bool { return hosts[i].Build < hosts[j].Build })
	queued, err := q.Queued(ctx)
	if err != nil {
		return workers, hosts, nil, err
	}
	var backlog []Backlog
	for worker, n := range queued {
		backlog = append(backlog, Backlog{Worker: worker, Queued: n})
	}
	sort.Slice(backlog, func(i, j int) bool { return backlog[i].Worker < backlog[j].Worker })
	return workers, hosts, backlog, nil
}

// WorkerSeen is a worker's word as a watch brings it: Status nil when the
// worker said it stopped (or its word aged out).
type WorkerSeen struct {
	ID     string
	Status *WorkerStatus
}

// WatchWorkers follows what the workers say of themselves, each one's
// latest first, then every change, until ctx ends; the channel closes
// when the watch ends.
func (q *Queue) WatchWorkers(ctx context.Context) (<-chan WorkerSeen, error) {
	w, err := q.status.Watch(ctx, "w.>")
	if err != nil {
		return nil, err
	}
	return follow(ctx, w, func(e jetstream.KeyValueEntry) (WorkerSeen, bool) {
		id, _ := unKey(strings.TrimPrefix(e.Key(), "w."))
		s := WorkerSeen{ID: id}
		if e.Operation() == jetstream.KeyValuePut {
			var st WorkerStatus
			if json.Unmarshal(e.Value(), &st) != nil || st.ID != id {
				return s, false // a word not its own: a worker writes only its key
			}
			st.Seen, st.Rev = e.Created(), e.Revision()
			s.Status = &st
		}
		return s, true
	}), nil
}

// WorkerSaid is what worker id said of itself last, read directly (nil
// when it said nothing, or that it stopped): for a host whose watch may
// have been cut (a NATS restart) before it counts a worker silent.
func (q *Queue) WorkerSaid(ctx context.Context, id string) (*WorkerStatus, error) {
	data, seq, err := q.lastWithSeq(ctx, "KV_"+WorkerBucket, "$KV."+WorkerBucket+"."+workerKey(id))
	if err != nil || data == nil {
		return nil, err
	}
	var st WorkerStatus
	if err := json.Unmarshal(data, &st); err != nil || st.ID != id {
		return nil, fmt.Errorf("%s: not a worker's word", workerKey(id))
	}
	st.Rev = seq
	return &st, nil
}

package workq

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
)

// SayWorker stores what a worker says of itself.
func (q *Queue) SayWorker(ctx context.Context, s WorkerStatus) error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	_, err = q.status.Put(ctx, workerKey(s.ID), data)
	return err
}

// WorkerGone drops a worker that stops.
func (q *Queue) WorkerGone(ctx context.Context, id string) { _ = q.status.Delete(ctx, workerKey(id)) }

// SayHost stores what a host with workers says of itself.
func (q *Queue) SayHost(ctx context.Context, s HostStatus) error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	_, err = q.status.Put(ctx, hostKey(s.Build), data)
	return err
}

// HostGone drops a host that stops.
func (q *Queue) HostGone(ctx context.Context, build string) { _ = q.status.Delete(ctx, hostKey(build)) }

// Backlog is one label set's jobs in the queue: waiting, or in a
// worker's hands.
type Backlog struct {
	Set    string
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
	for set, n := range queued {
		backlog = append(backlog, Backlog{Set: set, Queued: n})
	}
	sort.Slice(backlog, func(i, j int) bool { return backlog[i].Set < backlog[j].Set })
	return workers, hosts, backlog, nil
}

package remote

import (
	"context"
	"slices"
	"time"

	"github.com/agentforeman/foreman/internal/natsname"
	"github.com/agentforeman/foreman/internal/workq"
)

// Taking: the host hands each job to one worker it names, and no worker
// takes a job from a pool. The job goes on that worker's subject, which
// only that worker's consumer reads; its NATS user pulls and acknowledges
// from that consumer alone. So no other worker's credential can take,
// release, delay, re-deliver or answer it, and the host counts a result
// of it only from that worker (judge). A worker the host may give a job
// to is one that says it is there, whose word shows a user JWT the
// account's worker signing key made for the job's labels and has not
// revoked, and, with host.workers, whose key the host trusts.

// pooled is a worker as the host last heard it.
type pooled struct {
	st   workq.WorkerStatus
	at   time.Time // when the host heard it, by its own clock
	sets []string  // the label sets it may take (keys), as its user JWT says; nil: as it says
	why  string    // why no job may be given to it ("": it may)
}

// heard takes what a worker says of itself (nil: it stopped).
func (r *Remote) heard(s workq.WorkerSeen) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.poolChanged()
	if s.Status == nil {
		delete(r.pool, s.ID)
		return
	}
	p := &pooled{st: *s.Status, at: time.Now()}
	p.sets, p.why = r.vet(s.ID, s.Status.JWT)
	r.pool[s.ID] = p
}

// vet says whether a worker may be given jobs, by what the host knows now
// (host.workers, the account's JWT as last read): the label sets its user
// JWT was made for, or why not. Called with r.mu held.
func (r *Remote) vet(id, userJWT string) (sets []string, why string) {
	key := ""
	if r.o.Trust != nil {
		if key = r.o.Trust.Key(id); key == "" {
			return nil, "worker " + id + " is not one host.workers trusts"
		}
	}
	if r.claims == nil {
		return nil, ""
	}
	if key == "" {
		// Without host.workers, the key its JWT names is its own.
		key = jwtSubject(userJWT)
	}
	sets, err := workerSets(r.claims, userJWT, id, key)
	if err != nil {
		return nil, "worker " + id + ": " + err.Error()
	}
	return sets, ""
}

// revet vets every worker again: host.workers or the account's JWT
// changed.
func (r *Remote) revet() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, p := range r.pool {
		p.sets, p.why = r.vet(id, p.st.JWT)
	}
	r.poolChanged()
}

// poolChanged wakes every give waiting for a free worker. Called with r.mu
// held.
func (r *Remote) poolChanged() {
	close(r.wake)
	r.wake = make(chan struct{})
}

// recheck reads directly what each worker that would count as lost for
// its silence said last: one that said something the watch did not bring
// is heard now, and true says the watch has stopped bringing words (a
// NATS restart cut it): the caller starts it again.
func (r *Remote) recheck(ctx context.Context) (stale bool) {
	r.mu.Lock()
	var quiet []string
	for id, p := range r.pool {
		if time.Since(p.at) > r.o.Lease+time.Second {
			quiet = append(quiet, id)
		}
	}
	r.mu.Unlock()
	for _, id := range quiet {
		st, err := r.o.Queue.WorkerSaid(ctx, id)
		if err != nil || st == nil {
			continue
		}
		r.mu.Lock()
		p := r.pool[id]
		newer := p != nil && st.Rev > p.st.Rev
		r.mu.Unlock()
		if newer {
			r.heard(workq.WorkerSeen{ID: id, Status: st})
			stale = true
		}
	}
	return stale
}

// alive is how long after a worker's last word the host still counts it
// there (it says so every lease); gone, how long until a job given to it
// is given to another.
func (r *Remote) alive() time.Duration { return 3*r.o.Lease + time.Second }
func (r *Remote) gone() time.Duration  { return 3*r.o.Lease + 2*time.Second }

// fits reports whether p may run a job asking for labels.
func (p *pooled) fits(labels []string) bool {
	if p.sets != nil {
		return slices.Contains(p.sets, natsname.Key(natsname.LabelSet(labels)))
	}
	return workq.Fits(workq.LabelSet(labels), p.st.Labels)
}

// free is how many more jobs p may be given now: its slots, less its
// jobs of other builds (as it last said) and those this host gave it.
// Called with r.mu held.
func (r *Remote) free(id string, p *pooled) int {
	n := max(p.st.Parallel, 1) - r.given[id]
	for _, j := range p.st.Jobs {
		if j.Build != r.o.Build {
			n--
		}
	}
	return n
}

// pick is the worker to give a job asking for labels to now: one that
// may run it and has a free slot, the one with the most, one the job
// does not avoid first; "" when none is free. Called with r.mu held.
func (r *Remote) pick(labels, avoid []string) string {
	best, bestFree, bestAvoided := "", 0, true
	for id, p := range r.pool {
		if p.why != "" || time.Since(p.at) > r.alive() || !p.fits(labels) {
			continue
		}
		f := r.free(id, p)
		if f <= 0 {
			continue
		}
		avoided := slices.Contains(avoid, id)
		better := best == "" || (bestAvoided && !avoided) ||
			(avoided == bestAvoided && (f > bestFree || (f == bestFree && r.last[id].Before(r.last[best]))))
		if better {
			best, bestFree, bestAvoided = id, f, avoided
		}
	}
	return best
}

// choose waits for a worker to give a job asking for labels to, and
// counts the job as given to it.
func (r *Remote) choose(ctx context.Context, labels, avoid []string) (string, error) {
	r.mu.Lock()
	r.unassigned++
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.unassigned--
		r.mu.Unlock()
	}()
	for {
		r.mu.Lock()
		id := r.pick(labels, avoid)
		if id != "" {
			r.given[id]++
			r.last[id] = time.Now()
			r.mu.Unlock()
			return id, nil
		}
		wake := r.wake
		r.mu.Unlock()
		// Woken by a worker's word or a job's end; the lease bounds the
		// wait, for a worker whose word has aged meanwhile.
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-wake:
		case <-time.After(r.o.Lease):
		}
	}
}

// release counts a job given to worker as over.
func (r *Remote) release(worker string) {
	if worker == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.given[worker]--; r.given[worker] <= 0 {
		delete(r.given, worker)
	}
	r.poolChanged()
}

// lost says why the worker a job was given to will not answer it: it said
// it stopped, or has not been heard for long, or may no longer be given
// jobs (revoked, no longer trusted); "" while it may. Called with r.mu
// held.
func (r *Remote) lost(worker string) string {
	p := r.pool[worker]
	switch {
	case p == nil:
		return "worker " + worker + " stopped"
	case p.why != "":
		return p.why
	case time.Since(p.at) > r.gone():
		return "worker " + worker + " has not been heard from for " + time.Since(p.at).Round(time.Second).String()
	}
	return ""
}

package pool

import "sort"

// Lead is who leads a build, as this process sees it.
type Lead struct {
	Build   string `json:"build"`
	Leader  string `json:"leader,omitempty"` // the process holding the lease; "" if none
	Epoch   uint64 `json:"epoch"`
	This    bool   `json:"this"`              // this process leads it
	State   string `json:"state"`             // this process's part: standby, starting, leading, refused
	Problem string `json:"problem,omitempty"` // why refused, or what stopped it last
}

// Status lists the pool's builds, by name.
func (p *Pool) Status() []Lead {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Lead, 0, len(p.slots))
	for _, s := range p.slots {
		l := Lead{Build: s.name, State: s.state, Problem: s.problem}
		if p.watch != nil {
			o := p.watch.Lease(s.name)
			l.Leader, l.Epoch = o.Rec.Holder, o.Rec.Epoch
		}
		if s.lease != nil {
			l.Leader, l.Epoch, l.This = p.cl.ID(), s.lease.Epoch(), true
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Build < out[j].Build })
	return out
}

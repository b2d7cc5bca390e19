package host

// recent keeps the values of the last max keys put, oldest first: what the
// host remembers of what passed and landed, bounded (a build's are far
// fewer; what is forgotten is only checked again).
type recent[V any] struct {
	max   int
	vals  map[string]V
	order []string
}

func newRecent[V any](max int) *recent[V] { return &recent[V]{max: max, vals: map[string]V{}} }

// put keeps v under k; a key put again keeps its place.
func (r *recent[V]) put(k string, v V) {
	if _, ok := r.vals[k]; !ok {
		r.order = append(r.order, k)
	}
	r.vals[k] = v
	if len(r.order) > r.max {
		delete(r.vals, r.order[0])
		r.order = r.order[1:]
	}
}

func (r *recent[V]) get(k string) (V, bool) {
	v, ok := r.vals[k]
	return v, ok
}

// keys are the keys kept, oldest first.
func (r *recent[V]) keys() []string { return append([]string(nil), r.order...) }

// values are the values kept, oldest first.
func (r *recent[V]) values() []V {
	out := make([]V, 0, len(r.order))
	for _, k := range r.order {
		out = append(out, r.vals[k])
	}
	return out
}

package checks

import (
	"bytes"
	"io"
)

// Secret is a value the host knows that no log or verdict may show: its
// private key in each form it is written in, the tokens host.env hands
// the checks. A check's output is a builder's code talking, and the log
// and the failure line are served to the room.
type Secret struct {
	Name  string // what it is, said in its place: "host.env GITHUB_TOKEN"
	Value string
}

// MinSecret is the shortest value taken as a secret: a shorter one (a
// flag, a number) would blank out half the log and hide nothing.
const MinSecret = 8

// redactor writes output on with every form of every secret (see forms)
// replaced by the secret's name. It holds back the end of what it was
// given, as many characters as the longest form less one, until more comes
// (or flush), so that a form split across two writes, or across a line
// break, is still caught.
type redactor struct {
	w    io.Writer
	m    *matcher // nil: nothing to take out
	buf  []byte
	out  []byte
	view []byte
	pos  []int
}

func newRedactor(w io.Writer, secrets []Secret, asIs bool) *redactor {
	return &redactor{w: w, m: matcherFor(secrets, asIs)}
}

func (r *redactor) Write(p []byte) (int, error) {
	if r.m == nil {
		return r.w.Write(p)
	}
	r.buf = append(r.buf, p...)
	if err := r.emit(false); err != nil {
		return len(p), err
	}
	return len(p), nil
}

// emit writes buf on, each form found replaced, up to where a form may
// still be completing (all of it when final).
func (r *redactor) emit(final bool) error {
	r.view, r.pos = view(r.buf, r.view, r.pos)
	found := r.m.find(r.view)
	cut := len(r.view) - (r.m.longest - 1)
	if final {
		cut = len(r.view)
	}
	for _, sp := range found {
		if !final && sp.end > cut {
			// It may be the start of a longer form: not said yet.
			cut = min(cut, sp.start)
			break
		}
	}
	if cut <= 0 {
		return nil
	}
	rawCut := len(r.buf)
	if cut < len(r.view) {
		rawCut = r.pos[cut]
	}
	r.out = r.out[:0]
	at := 0
	for _, sp := range found {
		if sp.start >= cut {
			break
		}
		r.out = append(r.out, r.buf[at:r.pos[sp.start]]...)
		r.out = append(r.out, "[redacted: "+r.m.names[sp.name]+"]"...)
		at = r.pos[sp.end-1] + 1
	}
	r.out = append(r.out, r.buf[at:rawCut]...)
	r.buf = append(r.buf[:0], r.buf[rawCut:]...)
	if len(r.out) == 0 {
		return nil
	}
	_, err := r.w.Write(r.out)
	return err
}

// flush writes what is held back: the command ended.
func (r *redactor) flush() {
	if r.m == nil || len(r.buf) == 0 {
		return
	}
	_ = r.emit(true)
}

// redact takes the secrets out of one line the host writes itself.
func (r *redactor) redact(s string) string {
	if r.m == nil {
		return s
	}
	var b bytes.Buffer
	one := &redactor{w: &b, m: r.m}
	_, _ = one.Write([]byte(s))
	one.flush()
	return b.String()
}

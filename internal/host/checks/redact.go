package checks

import (
	"bytes"
	"io"
	"strings"
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

// redactor writes output on with every secret replaced by its name, and
// holds back the last len(longest secret)-1 bytes of each write until
// more comes (or flush), so that a secret split across two writes is
// still caught.
type redactor struct {
	w       io.Writer
	secrets []Secret
	hold    int
	buf     []byte
	out     []byte
}

func newRedactor(w io.Writer, secrets []Secret) *redactor {
	r := &redactor{w: w}
	for _, s := range secrets {
		if len(s.Value) >= MinSecret {
			r.secrets = append(r.secrets, s)
			r.hold = max(r.hold, len(s.Value)-1)
		}
	}
	return r
}

func (r *redactor) Write(p []byte) (int, error) {
	if len(r.secrets) == 0 {
		return r.w.Write(p)
	}
	r.buf = append(r.buf, p...)
	r.out = r.replace(r.out[:0])
	if keep := r.hold; len(r.buf) > keep {
		r.out = append(r.out, r.buf[:len(r.buf)-keep]...)
		r.buf = append(r.buf[:0], r.buf[len(r.buf)-keep:]...)
	}
	if len(r.out) > 0 {
		if _, err := r.w.Write(r.out); err != nil {
			return len(p), err
		}
	}
	return len(p), nil
}

// replace moves buf to out up to its last secret, each secret replaced; a
// secret that may still be completing stays in buf.
func (r *redactor) replace(out []byte) []byte {
	for {
		at, n, name := -1, 0, ""
		for _, s := range r.secrets {
			if i := bytes.Index(r.buf, []byte(s.Value)); i >= 0 && (at < 0 || i < at || i == at && len(s.Value) > n) {
				at, n, name = i, len(s.Value), s.Name
			}
		}
		if at < 0 {
			return out
		}
		out = append(out, r.buf[:at]...)
		out = append(out, "[redacted: "+name+"]"...)
		r.buf = r.buf[at+n:]
	}
}

// flush writes what is held back: the command ended.
func (r *redactor) flush() {
	if len(r.buf) == 0 {
		return
	}
	r.out = r.replace(r.out[:0])
	r.out = append(r.out, r.buf...)
	r.buf = r.buf[:0]
	_, _ = r.w.Write(r.out)
}

// redact takes the secrets out of one line the host writes itself.
func (r *redactor) redact(s string) string {
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec.Value, "[redacted: "+sec.Name+"]")
	}
	return s
}

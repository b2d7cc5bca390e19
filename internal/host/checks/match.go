package checks

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"sort"
	"strings"
	"sync"
)

// forms are the ways a check's output may carry a secret that the log must
// still not show: as it is; in hex, lower and upper case; in base64, with
// the standard and the URL alphabet, wherever in the encoded stream it
// starts (each of the three alignments of its first byte gives other
// characters: only those wholly made of the secret's bits are kept, so
// padding and what surrounds it do not matter); and URL-encoded (as
// url.QueryEscape and PathEscape write it, and every byte as %XX in either
// case). A check handed a secret can always write it in a form not here
// (reversed, XORed, one character a line): redaction keeps the host's
// keys out of an honest log, it cannot keep a hostile check from leaking
// what it was given (docs/HOST.md).
func forms(v string) []string {
	b := []byte(v)
	out := []string{v, hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b))}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for align := 0; align < 3; align++ {
			out = append(out, base64Fragment(enc, b, align))
		}
	}
	out = append(out, url.QueryEscape(v), url.PathEscape(v), percentAll(b, "%02X"), percentAll(b, "%02x"))
	seen := map[string]bool{}
	kept := out[:0]
	for _, f := range out {
		f = stripBreaks(f)
		if len(f) >= MinSecret && !seen[f] {
			seen[f] = true
			kept = append(kept, f)
		}
	}
	return kept
}

// base64Fragment is what the base64 of a stream holds wherever b lies in
// it at byte offset align (mod 3): the characters whose six bits all come
// from b.
func base64Fragment(enc *base64.Encoding, b []byte, align int) string {
	buf := make([]byte, align+len(b)+2)
	copy(buf[align:], b)
	s := enc.EncodeToString(buf)
	from := (8*align + 5) / 6
	to := 8 * (align + len(b)) / 6
	return s[from:to]
}

func percentAll(b []byte, format string) string {
	const digits = "0123456789ABCDEF"
	var sb strings.Builder
	for _, c := range b {
		sb.WriteByte('%')
		hi, lo := digits[c>>4], digits[c&15]
		if format == "%02x" {
			hi, lo = lower(hi), lower(lo)
		}
		sb.WriteByte(hi)
		sb.WriteByte(lo)
	}
	return sb.String()
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func stripBreaks(s string) string {
	return strings.NewReplacer("\r", "", "\n", "").Replace(s)
}

// matcher finds every form of every secret in a stream at once: an
// Aho-Corasick automaton made a table (bytes that no form holds share one
// column), so a check that prints gigabytes is read once, at one table
// lookup a byte, whatever the number of secrets.
type matcher struct {
	class   [256]uint8
	columns int
	// next[state*columns+class] is the next state's row (state*columns),
	// negative when a form ends at that state or a shorter one.
	next    []int32
	depth   []int32 // each state's length
	name    []int32 // the secret whose form ends at this state (-1: none)
	dict    []int32 // the next shorter state that ends a form (0: none)
	names   []string
	longest int // characters of the longest form
}

// matchers keeps the last one built: a host's secrets are the same from one
// run to the next.
var matchers struct {
	mu  sync.Mutex
	key [32]byte
	m   *matcher
}

// matcherFor is the matcher of secrets (those shorter than MinSecret left
// out), nil when none is left; asIs looks for each as it is only (the test
// that proves the other forms needs it).
func matcherFor(secrets []Secret, asIs bool) *matcher {
	h := sha256.New()
	if asIs {
		h.Write([]byte("as is\x00"))
	}
	n := 0
	for _, s := range secrets {
		if len(s.Value) >= MinSecret {
			h.Write([]byte(s.Name + "\x00" + s.Value + "\x00"))
			n++
		}
	}
	if n == 0 {
		return nil
	}
	var key [32]byte
	copy(key[:], h.Sum(nil))
	matchers.mu.Lock()
	defer matchers.mu.Unlock()
	if matchers.m != nil && matchers.key == key {
		return matchers.m
	}
	m := newMatcher(secrets, asIs)
	matchers.key, matchers.m = key, m
	return m
}

func newMatcher(secrets []Secret, asIs bool) *matcher {
	type pattern struct {
		text string
		name int32
	}
	var pats []pattern
	m := &matcher{}
	for _, s := range secrets {
		if len(s.Value) < MinSecret {
			continue
		}
		m.names = append(m.names, s.Name)
		fs := []string{stripBreaks(s.Value)}
		if !asIs {
			fs = forms(s.Value)
		}
		for _, f := range fs {
			pats = append(pats, pattern{f, int32(len(m.names) - 1)})
		}
	}
	// Byte classes: one column for each byte some form holds, and column
	// 0 for every other byte (a line break of the view among them).
	for _, p := range pats {
		for i := 0; i < len(p.text); i++ {
			if m.class[p.text[i]] == 0 {
				m.columns++
				m.class[p.text[i]] = uint8(m.columns)
			}
		}
		m.longest = max(m.longest, len(p.text))
	}
	m.columns++
	newState := func(depth int32) int32 {
		m.next = append(m.next, make([]int32, m.columns)...)
		m.depth = append(m.depth, depth)
		m.name = append(m.name, -1)
		m.dict = append(m.dict, 0)
		return int32(len(m.depth) - 1)
	}
	newState(0)
	for _, p := range pats {
		s := int32(0)
		for i := 0; i < len(p.text); i++ {
			c := int32(m.class[p.text[i]])
			if m.next[s*int32(m.columns)+c] == 0 {
				t := newState(int32(i + 1))
				m.next[s*int32(m.columns)+c] = t
			}
			s = m.next[s*int32(m.columns)+c]
		}
		if m.name[s] < 0 {
			m.name[s] = p.name
		}
	}
	// Breadth first: each state's failure (the longest proper suffix that
	// is a state) completes its row, and its dictionary link is the
	// nearest failure that ends a form.
	fail := make([]int32, len(m.depth))
	cols := int32(m.columns)
	var queue []int32
	for c := int32(0); c < cols; c++ {
		if t := m.next[c]; t != 0 {
			queue = append(queue, t)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		f := fail[s]
		if m.name[f] >= 0 {
			m.dict[s] = f
		} else {
			m.dict[s] = m.dict[f]
		}
		for c := int32(0); c < cols; c++ {
			t := m.next[s*cols+c]
			if t == 0 || m.depth[t] != m.depth[s]+1 {
				m.next[s*cols+c] = m.next[f*cols+c]
				continue
			}
			fail[t] = m.next[f*cols+c]
			queue = append(queue, t)
		}
	}
	for i, t := range m.next {
		m.next[i] = t * cols
		if m.name[t] >= 0 || m.dict[t] != 0 {
			m.next[i] = -t * cols
		}
	}
	return m
}

// span is one form found: view[start:end], of secret name.
type span struct {
	start, end int
	name       int32
}

// find returns the forms in view, leftmost first and, of those starting
// at one place, the longest; none overlapping.
func (m *matcher) find(view []byte) []span {
	var all []span
	cols := int32(m.columns)
	next, class := m.next, &m.class
	s := int32(0)
	for i, b := range view {
		s = next[s+int32(class[b])]
		if s >= 0 {
			continue
		}
		s = -s
		for t := s / cols; t != 0; t = m.dict[t] {
			if m.name[t] >= 0 {
				all = append(all, span{start: i + 1 - int(m.depth[t]), end: i + 1, name: m.name[t]})
			}
		}
	}
	if len(all) == 0 {
		return nil
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].start != all[j].start {
			return all[i].start < all[j].start
		}
		return all[i].end > all[j].end
	})
	out := all[:0]
	end := -1
	for _, sp := range all {
		if sp.start >= end {
			out = append(out, sp)
			end = sp.end
		}
	}
	return out
}

// view is raw as the matcher reads it: one line break (\n, \r\n or \r)
// between two characters is left out, so that a form wrapped by base64
// or xxd -p (76 and 60 characters a line) is still found; every further
// break byte of a run counts as a character no form holds, so a form
// spread over blank lines is not, and the bytes held back stay bounded.
// pos[i] is where view[i] is in raw.
func view(raw []byte, v []byte, pos []int) ([]byte, []int) {
	v, pos = v[:0], pos[:0]
	for i := 0; i < len(raw); i++ {
		b := raw[i]
		if b != '\n' && b != '\r' {
			v = append(v, b)
			pos = append(pos, i)
			continue
		}
		j := i + 1
		if b == '\r' && j < len(raw) && raw[j] == '\n' {
			j++
		}
		for ; j < len(raw) && (raw[j] == '\n' || raw[j] == '\r'); j++ {
			v = append(v, '\n')
			pos = append(pos, j)
		}
		i = j - 1
	}
	return v, pos
}

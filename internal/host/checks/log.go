package checks

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"sync"
)

// capped is the log of a run: output is written to the file until limit
// bytes, then counted and dropped, so a check that prints gigabytes costs
// the disk nothing past the limit. It also watches the output of the
// command running for the line that best says why it failed.
type capped struct {
	mu      sync.Mutex
	f       *os.File
	limit   int64
	written int64
	cut     int64
	err     error

	partial []byte // the current line, up to maxLine
	long    bool   // the current line ran past maxLine
	first   string // the first line that reads as a failure, cleaned
	last    []byte // the last non-blank line, as written
}

// maxLine is how much of one output line is looked at.
const maxLine = 512

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keep(p)
	c.scan(p)
	return len(p), nil
}

func (c *capped) keep(p []byte) {
	room := c.limit - c.written
	if room <= 0 {
		c.cut += int64(len(p))
		return
	}
	if int64(len(p)) > room {
		c.cut += int64(len(p)) - room
		p = p[:room]
	}
	n, err := c.f.Write(p)
	c.written += int64(n)
	if err != nil && c.err == nil {
		c.err = err
	}
}

func (c *capped) scan(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			c.add(p)
			return
		}
		c.add(p[:i])
		c.endLine()
		p = p[i+1:]
	}
}

func (c *capped) add(p []byte) {
	if room := maxLine - len(c.partial); room > 0 {
		if len(p) > room {
			p, c.long = p[:room], true
		}
		c.partial = append(c.partial, p...)
	} else if len(p) > 0 {
		c.long = true
	}
}

func (c *capped) endLine() {
	line := c.partial
	c.partial, c.long = c.partial[:0], false
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	c.last = append(c.last[:0], line...)
	if c.first == "" && (mayFail(line) || diagnostic(line)) {
		if l := clean(string(line)); failureRE.MatchString(l) || diagnostic(line) {
			c.first = l
		}
	}
}

// failureWords are what failureRE looks for, as they are written: a cheap
// first look at every line of output, which may be gigabytes.
var failureWords = [][]byte{[]byte("fail"), []byte("FAIL"), []byte("Fail"), []byte("error"), []byte("ERROR"),
	[]byte("Error"), []byte("panic"), []byte("fatal"), []byte("FATAL"), []byte("Fatal"), []byte("assert"),
	[]byte("Assert"), []byte("ASSERT"), []byte("Traceback"), []byte("xception"), []byte("✗"), []byte("✘")}

func mayFail(line []byte) bool {
	for _, w := range failureWords {
		if bytes.Contains(line, w) {
			return true
		}
	}
	return false
}

// diagnostic reports a line in the form compilers, linters and git diff
// --check use for a problem: path:line: message (or path:line:col:).
func diagnostic(line []byte) bool {
	i := bytes.IndexByte(line, ':')
	if i <= 0 || i > 200 || bytes.IndexByte(line[:i], ' ') >= 0 {
		return false
	}
	j := i + 1
	for j < len(line) && line[j] >= '0' && line[j] <= '9' {
		j++
	}
	return j > i+1 && j < len(line) && line[j] == ':'
}

// failureRE is what reads as a failure in the output of common tools: go
// test (--- FAIL, FAIL pkg, panic:), compilers (file:line: error), make
// (*** ... Error), test runners (FAILED, AssertionError), and any line
// saying error or fatal.
var failureRE = regexp.MustCompile(`(?i)(\bfail(ed|ure|s)?\b|\berrors?\b|\bpanic:|\bfatal\b|assert|traceback|exception|✗|✘)`)

// mark starts watching a new command's output.
func (c *capped) mark() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.partial, c.long, c.first, c.last = c.partial[:0], false, "", c.last[:0]
}

// failure is the line that best says why the command watched failed.
func (c *capped) failure() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.partial) > 0 {
		c.endLine()
	}
	if c.first != "" {
		return c.first
	}
	return clean(string(c.last))
}

// note writes one line of the host's own into the log, within the limit.
func (c *capped) note(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.partial) > 0 { // end a line the command left open
		c.keep([]byte("\n"))
	}
	c.keep([]byte(s + "\n"))
}

// force writes a last line even past the limit: the log must say it was
// cut.
func (c *capped) force(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.f.WriteString("\n" + s + "\n")
	c.written += int64(n)
	if err != nil && c.err == nil {
		c.err = err
	}
}

// clean makes an output line safe to quote on one chat line: no control
// characters (ANSI colours included), no runs of spaces.
func clean(s string) string {
	s = ansiRE.ReplaceAllString(s, "")
	var b strings.Builder
	space := false
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == '\u2028' || r == '\u2029' || r == 0xfffd {
			r = ' '
		}
		if r == ' ' {
			if !space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(r)
	}
	return strings.TrimSpace(b.String())
}

var ansiRE = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`)

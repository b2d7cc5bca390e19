package remote

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentforeman/foreman/internal/host"
)

// The push gate: the agents foreman up starts push their branches to the
// host's repository (host.repo, where the host fetches a builder's branch
// from) through the same server, with a token per agent (GrantPush), and
// each may update only refs/heads/<its name>/...: never the target,
// another agent's branch, a tag, or foreman's own refs. The confined agent
// cannot write host.repo itself (agentbox), so the gate is its only way
// in, and it knows who pushes by the token, never by what the agent says.
//
// The commands a push carries (pkt-lines "<old> <new> <ref>", before the
// pack) are read here before git http-backend sees anything: a push that
// names one ref outside the namespace is refused whole, in git's own
// report, so the agent's git shows "! [remote rejected] ... (reason)",
// and no object of it reaches the repository. receive-pack, for its part,
// is shown only the agent's refs and refuses to update a hidden one (its
// receive.hideRefs): a second wall, not the one the tests rely on.

// AgentFetches are the refs an agent's token fetches: every branch (the
// target, another builder's it takes over, as the ACK names it) and the
// host's handoff pins (refs/foreman/handoff/<c>/<n>).
var AgentFetches = []string{"refs/heads", "refs/foreman/handoff"}

// PushWithout names the gate's defences a test turns off, to show the
// attack each stops succeeding without it. A real host never sets it.
type PushWithout struct {
	// Namespaces: an agent's token pushes to any ref (the token is still
	// needed).
	Namespaces bool
}

// GrantPush makes agent's push token: it lets a push update refs under
// refs/heads/<agent>/ and nothing else, until Revoke. agent is a name as
// a branch prefix takes it (no @, no /).
func (s *GitServer) GrantPush(agent string) (string, error) {
	if agent == "" || strings.ContainsAny(agent, "/@ \t\n\\:~^?*[") || strings.HasPrefix(agent, ".") || strings.HasPrefix(agent, "-") {
		return "", fmt.Errorf("agent %q: not a branch prefix (a name of letters, digits, - and _, as the room shows it without @)", agent)
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	token := hex.EncodeToString(b)
	s.mu.Lock()
	s.grants[sha256.Sum256([]byte(token))] = grant{pusher: agent}
	s.mu.Unlock()
	return token, nil
}

// RevokePush ends every push token of agent's (an agent stopped for good):
// nothing is taken with them from now on.
func (s *GitServer) RevokePush(agent string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, g := range s.grants {
		if g.pusher == agent {
			delete(s.grants, k)
		}
	}
}

// SetPushWithout turns defences of the gate off, for the tests that prove
// each one.
func (s *GitServer) SetPushWithout(w PushWithout) {
	s.mu.Lock()
	s.pushWithout = w
	s.mu.Unlock()
}

// pushNamespace is the refs agent may update.
func pushNamespace(agent string) string { return "refs/heads/" + agent + "/" }

// maxPush bounds one push's request: its commands and its pack.
const maxPush = 256 << 20

// servePush serves an agent's push: the advertisement of its own refs,
// and receive-pack for a push whose every command is in its namespace.
func (s *GitServer) servePush(w http.ResponseWriter, r *http.Request, agent, path string, without PushWithout) {
	service := r.URL.Query().Get("service")
	switch {
	case r.Method == http.MethodGet && path == "/info/refs" && service == "git-receive-pack":
		s.pushBackend(agent, without).ServeHTTP(w, r)
		return
	case r.Method == http.MethodGet && path == "/info/refs" && service == "git-upload-pack",
		r.Method == http.MethodPost && path == "/git-upload-pack":
		// What an agent starts from and takes over: the branches (the
		// target, and the one a builder that left worked on) and the
		// work the host pinned for the next builder; never the jobs'
		// pins or anything else of the host's.
		r.Body = http.MaxBytesReader(w, r.Body, maxRequest)
		s.backend(AgentFetches...).ServeHTTP(w, r)
		return
	case r.Method == http.MethodPost && path == "/git-receive-pack":
	default:
		http.Error(w, "an agent's token fetches (git-upload-pack) and pushes (git-receive-pack), and does nothing else here", http.StatusForbidden)
		return
	}
	raw := http.MaxBytesReader(w, r.Body, maxPush)
	body := io.Reader(raw)
	if enc := r.Header.Get("Content-Encoding"); enc == "gzip" || enc == "x-gzip" {
		z, err := gzip.NewReader(body)
		if err != nil {
			http.Error(w, "the push's body is not gzip: "+err.Error(), http.StatusBadRequest)
			return
		}
		// Unpacked, it is bounded as packed: a small gzip of a huge
		// stream costs no more than a plain push.
		body = io.LimitReader(z, maxPush)
		r.Header.Del("Content-Encoding")
		r.ContentLength = -1
	}
	head, cmds, sideBand, err := readCommands(body)
	if err != nil {
		http.Error(w, "the push's commands: "+err.Error(), http.StatusBadRequest)
		return
	}
	if !without.Namespaces {
		if why := outside(agent, cmds); why != "" {
			// Read the rest as sent (bounded, never unpacked), or git,
			// still sending its pack, may not read the answer.
			_, _ = io.Copy(io.Discard, raw)
			refuse(w, cmds, why, sideBand)
			return
		}
	}
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(head), body))
	s.pushBackend(agent, without).ServeHTTP(w, r)
}

// command is one ref update of a push.
type command struct{ old, new, ref string }

// zeroID is the id of no object (both hash lengths: a prefix of it).
const zeroID = "0000000000000000000000000000000000000000000000000000000000000000"

func (c command) delete() bool { return strings.HasPrefix(zeroID, c.new) }

// outside says why cmds are not all agent's to make ("" when they are).
func outside(agent string, cmds []command) string {
	ns := pushNamespace(agent)
	for _, c := range cmds {
		// The host core's rule, for a full ref name: the gate and the
		// READYs it lets through agree on what is an agent's.
		if !strings.HasPrefix(c.ref, "refs/heads/") || !host.InNamespace(agent, c.ref) {
			verb := "update"
			if c.delete() {
				verb = "delete"
			}
			return fmt.Sprintf("%s may %s only its own branches, %s*: push to %s<component>", agent, verb, strings.TrimPrefix(ns, "refs/heads/"), strings.TrimPrefix(ns, "refs/heads/"))
		}
	}
	return ""
}

// maxCommands bounds the ref updates one push may name.
const maxCommands = 1000

// readCommands reads a push's commands, up to their flush packet, and
// returns the bytes read (to hand on as they came), the commands, and
// whether the client asked for its report on a side band.
func readCommands(body io.Reader) (head0 []byte, cmds []command, sideBand bool, err error) {
	head, cmds, caps, err := readPackets(body)
	for _, c := range strings.Fields(caps) {
		sideBand = sideBand || c == "side-band-64k" || c == "side-band"
	}
	return head, cmds, sideBand, err
}

func readPackets(body io.Reader) ([]byte, []command, string, error) {
	var head bytes.Buffer
	var cmds []command
	var caps string
	for {
		var size [4]byte
		if _, err := io.ReadFull(body, size[:]); err != nil {
			return nil, nil, "", fmt.Errorf("cut short before its end: %w", err)
		}
		head.Write(size[:])
		n, err := strconv.ParseUint(string(size[:]), 16, 16)
		if err != nil {
			return nil, nil, "", fmt.Errorf("a packet's length %q is not hex", size)
		}
		if n == 0 {
			break // the flush: the pack follows
		}
		if n < 4 {
			return nil, nil, "", fmt.Errorf("a packet of length %d before the commands' end", n)
		}
		line := make([]byte, n-4)
		if _, err := io.ReadFull(body, line); err != nil {
			return nil, nil, "", fmt.Errorf("cut short in a packet: %w", err)
		}
		head.Write(line)
		text, c, found := bytes.Cut(line, []byte{0}) // the first carries the capabilities after a NUL
		if found && caps == "" {
			caps = string(c)
		}
		fields := strings.Fields(string(text))
		switch {
		case len(fields) == 2 && fields[0] == "shallow":
			continue // a shallow client's boundary: no update
		case len(fields) != 3:
			return nil, nil, "", fmt.Errorf("%q is not \"<old> <new> <ref>\" (a signed push is not taken)", text)
		}
		if len(cmds) == maxCommands {
			return nil, nil, "", fmt.Errorf("more than %d ref updates in one push", maxCommands)
		}
		cmds = append(cmds, command{old: fields[0], new: fields[1], ref: fields[2]})
	}
	if len(cmds) == 0 {
		return nil, nil, "", errors.New("none")
	}
	return head.Bytes(), cmds, caps, nil
}

// refuse answers a push with git's report: every ref refused, with why,
// which git shows the pusher as "! [remote rejected] <ref> (why)"; on
// side band 1 when the client asked for one.
func refuse(w http.ResponseWriter, cmds []command, why string, sideBand bool) {
	var report bytes.Buffer
	pkt(&report, "unpack ok\n")
	for _, c := range cmds {
		pkt(&report, "ng "+c.ref+" "+strings.ReplaceAll(why, "\n", " ")+"\n")
	}
	report.WriteString("0000")
	w.Header().Set("Content-Type", "application/x-git-receive-pack-result")
	w.Header().Set("Cache-Control", "no-cache")
	if !sideBand {
		_, _ = w.Write(report.Bytes())
		return
	}
	var out bytes.Buffer
	for rest := report.Bytes(); len(rest) > 0; {
		n := min(len(rest), 65515)
		out.WriteString(fmt.Sprintf("%04x", n+5))
		out.WriteByte(1)
		out.Write(rest[:n])
		rest = rest[n:]
	}
	out.WriteString("0000")
	_, _ = w.Write(out.Bytes())
}

func pkt(b *bytes.Buffer, s string) {
	fmt.Fprintf(b, "%04x%s", len(s)+4, s)
}

package otlp

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowExport is an export whose body never comes: its headers, with a
// valid token and a length of a megabyte, and not a byte more. The
// receiver either answers it at once or starts reading its body, which
// then holds a goroutine and a buffer for as long as the sender wants.
type slowExport struct {
	conn   net.Conn
	answer chan *http.Response // the answer, if one comes
}

func startSlowExport(t *testing.T, url, token string, headers ...string) *slowExport {
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	extra := ""
	for _, h := range headers {
		extra += h + "\r\n"
	}
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/x-protobuf\r\nContent-Length: %d\r\n%s\r\n",
		LogsPath, token, 1<<20, extra)
	require.NoError(t, err)
	s := &slowExport{conn: conn, answer: make(chan *http.Response, 1)}
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			s.answer <- resp
		}
	}()
	return s
}

// reads makes r tell, on the returned channel, each time it starts to
// read a body.
func reads(r *Receiver) chan struct{} {
	started := make(chan struct{}, 64)
	r.onRead = func() { started <- struct{}{} }
	return started
}

// await says what became of a slow export: answered (its status), or its
// body is being read (0). Whichever happens first is the only thing that
// happens: an export is answered without reading, or read until its body
// comes; no clock decides.
func await(t *testing.T, s *slowExport, started chan struct{}) int {
	select {
	case resp := <-s.answer:
		return resp.StatusCode
	case <-started:
		return 0
	case <-time.After(time.Minute):
		t.Fatal("an export was neither answered nor read within a minute")
		return -1
	}
}

// A flood of exports with a valid token whose bodies trickle in (an
// agent's own token, stolen or used by a hostile agent) holds at most
// MaxInFlight bodies: the slot is taken before the body is read, so the
// third of a receiver with two is answered 503 at once, and never read.
// Before, the slot was taken after the body was read and parsed, and
// every such export was read: thousands of connections, each holding a
// goroutine and up to 8 MiB, until foreman ran out of memory.
func TestASlowFloodHoldsNoMoreThanMaxInFlightBodies(t *testing.T) {
	r, srv := serve(t, newSink(t), Options{MaxInFlight: 2, Tokens: map[string]string{tokB1: "@b1", tokB2: "@b2", "tok-b3-0123456789": "@b3"}})
	started := reads(r)
	released := make(chan struct{}, 64)
	r.onRelease = func() { released <- struct{}{} }
	tokens := []string{tokB1, tokB2, "tok-b3-0123456789", tokB1, tokB2, "tok-b3-0123456789"} // no agent past its share
	var held []*slowExport
	for i, tok := range tokens {
		s := startSlowExport(t, srv.URL, tok)
		status := await(t, s, started)
		if i < 2 {
			require.Zero(t, status, "export %d: read, within MaxInFlight", i)
			held = append(held, s)
			continue
		}
		require.NotZero(t, status, "export %d: the receiver reads %d bodies at once with MaxInFlight 2", i, r.Counts().Reading)
		assert.Equal(t, http.StatusServiceUnavailable, status, "export %d", i)
	}
	c := r.Counts()
	assert.EqualValues(t, 2, c.Reading, "bodies being read")
	assert.EqualValues(t, 2, c.InFlight)
	assert.EqualValues(t, len(tokens)-2, c.Refused[RefusedBusy], "counted busy")

	// A refusal says when to send again, and leaves no body to wait for.
	s := startSlowExport(t, srv.URL, tokB1)
	resp := <-s.answer
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.True(t, resp.Close, "the connection is closed: the server does not wait for the rest of the body")

	// The held ones end (their senders go), and give their slots back.
	for _, s := range held {
		s.conn.Close()
	}
	ns := time.Now().UnixNano()
	body := `{"resourceLogs":[{"resource":{"attributes":[{"key":"foreman.agent","value":{"stringValue":"@b1"}}]},"scopeLogs":[{"logRecords":[{"timeUnixNano":"` + itoa(ns) + `","attributes":[{"key":"event.name","value":{"stringValue":"api_request"}},{"key":"cost_usd","value":{"doubleValue":0.01}}]}]}]}]}`
	for range held {
		<-released
	}
	assert.Equal(t, http.StatusOK, post(t, srv.URL+LogsPath, tokB1, "application/json", body), "the slots were given back")
}

// One agent's flood does not stop another agent's export: an agent has
// at most MaxPerAgent exports in flight, one more is answered 429 at once
// (counted as share), and the others' exports are taken. Without the
// share, one agent's slow exports took every slot and the others' were
// answered 503.
func TestOneAgentsFloodLeavesTheOthersRoom(t *testing.T) {
	r, srv := serve(t, newSink(t), Options{MaxInFlight: 8})
	started := reads(r)
	var refused int
	for i := range 8 {
		s := startSlowExport(t, srv.URL, tokB1)
		status := await(t, s, started)
		if status == 0 {
			continue
		}
		refused = status
		assert.Equal(t, DefaultMaxPerAgent, i, "refused once @b1 had its share in flight")
		assert.Equal(t, http.StatusTooManyRequests, status)
		break
	}
	assert.Equal(t, http.StatusTooManyRequests, refused, "@b1 is refused past its share")
	assert.EqualValues(t, 1, r.Counts().Refused[RefusedShare])
	ns := time.Now().UnixNano()
	body := `{"resourceLogs":[{"resource":{"attributes":[{"key":"foreman.agent","value":{"stringValue":"@b2"}}]},"scopeLogs":[{"logRecords":[{"timeUnixNano":"` + itoa(ns) + `","attributes":[{"key":"event.name","value":{"stringValue":"api_request"}},{"key":"cost_usd","value":{"doubleValue":0.01}}]}]}]}]}`
	assert.Equal(t, http.StatusOK, post(t, srv.URL+LogsPath, tokB2, "application/json", body), "@b2's export is taken while @b1 floods")
}

// A body that does not come is not waited for past ReadTimeout, gzipped
// or not: its slot is given back and the sender told why.
func TestABodyThatDoesNotComeIsCutOff(t *testing.T) {
	r, srv := serve(t, newSink(t), Options{MaxInFlight: 1, ReadTimeout: 50 * time.Millisecond})
	started := reads(r)
	for i, headers := range [][]string{nil, {"Content-Encoding: gzip"}} {
		s := startSlowExport(t, srv.URL, tokB1, headers...)
		<-started
		var resp *http.Response
		select {
		case resp = <-s.answer:
		case <-time.After(time.Minute):
			t.Fatalf("%v: the body has been waited for a minute, past ReadTimeout (50ms)", headers)
		}
		assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode, "%v", headers)
		assert.EqualValues(t, i+1, r.Counts().Refused[RefusedBody])
		assert.EqualValues(t, 0, r.Counts().Reading)
		assert.EqualValues(t, 0, r.Counts().InFlight, "the slot is given back")
	}
}

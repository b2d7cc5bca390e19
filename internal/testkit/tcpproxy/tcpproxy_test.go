package tcpproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// echo is a server that sends back every line it reads.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func dial(t *testing.T, p *Proxy) (net.Conn, *bufio.Reader) {
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	return c, bufio.NewReader(c)
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, line string) {
	_, err := c.Write([]byte(line + "\n"))
	require.NoError(t, err)
	got, err := r.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, line+"\n", got)
}

// ended asserts that the proxy ended the connection read by r: the read
// fails, and not by running out of time.
func ended(t *testing.T, r *bufio.Reader, why string) {
	_, err := r.ReadString('\n')
	require.Error(t, err, why)
	assert.False(t, timedOut(err), "%s: the connection stayed open", why)
}

func timedOut(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestForwardsHoldsAndCuts(t *testing.T) {
	p := New(t, echo(t))
	c, r := dial(t, p)
	roundTrip(t, c, r, "hello")

	p.Hold()
	_, r2 := dial(t, p)
	ended(t, r2, "a new connection is refused while held")
	roundTrip(t, c, r, "still here") // open ones are not touched by a hold

	p.Cut()
	ended(t, r, "Cut ends the open connection")

	p.Release()
	c3, r3 := dial(t, p)
	roundTrip(t, c3, r3, "back")
}

func TestFreezeDropsWhatTheServerSends(t *testing.T) {
	p := New(t, echo(t))
	c, r := dial(t, p)
	roundTrip(t, c, r, "before")
	p.Freeze()
	_, err := c.Write([]byte("lost\n"))
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
	_, err = r.ReadString('\n')
	assert.True(t, timedOut(err), "nothing comes back while frozen: %v", err)

	c2, r2 := dial(t, p) // new connections are not frozen
	roundTrip(t, c2, r2, "fresh")
}

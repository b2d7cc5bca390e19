// Package tcpproxy is a TCP proxy for tests on 127.0.0.1 that can fail its
// connections on demand, to stage network trouble between a client and a
// server (the chat room, NATS) while everything else keeps working.
package tcpproxy

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// Proxy forwards the connections to its address to a target address.
type Proxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu     sync.Mutex
	hold   bool
	conns  map[net.Conn]struct{}
	frozen map[net.Conn]*atomic.Bool // by server side: its server-to-client half drops what it reads
}

// New forwards a random 127.0.0.1 port to target (host:port), until the
// test ends.
func New(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}, frozen: map[net.Conn]*atomic.Bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the host:port clients dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Hold refuses new connections (they are closed at once) until Release.
func (p *Proxy) Hold() {
	p.mu.Lock()
	p.hold = true
	p.mu.Unlock()
}

// Release accepts connections again.
func (p *Proxy) Release() {
	p.mu.Lock()
	p.hold = false
	p.mu.Unlock()
}

// Freeze drops everything the server sends on the open connections from
// now on, while the client's bytes still reach it: the client's view of
// the server stops. New connections are not frozen.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	for _, f := range p.frozen {
		f.Store(true)
	}
	p.mu.Unlock()
}

// Cut closes every open connection.
func (p *Proxy) Cut() {
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
}

func (p *Proxy) close() {
	p.ln.Close()
	p.Cut()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		// Under the lock from the hold check to the registration, so that
		// a Hold and Cut in a row leave no connection through.
		p.mu.Lock()
		if p.hold {
			p.mu.Unlock()
			client.Close()
			continue
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			client.Close()
			continue
		}
		frozen := new(atomic.Bool)
		p.conns[client], p.conns[server] = struct{}{}, struct{}{}
		p.frozen[server] = frozen
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipe(server, client, nil)
		go p.pipe(client, server, frozen)
	}
}

// pipe copies from src to dst until either fails, dropping what it reads
// while frozen is set.
func (p *Proxy) pipe(dst, src net.Conn, frozen *atomic.Bool) {
	defer p.wg.Done()
	defer func() {
		dst.Close()
		src.Close()
		p.mu.Lock()
		delete(p.conns, dst)
		delete(p.conns, src)
		delete(p.frozen, src)
		p.mu.Unlock()
	}()
	if frozen == nil {
		_, _ = io.Copy(dst, src)
		return
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !frozen.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

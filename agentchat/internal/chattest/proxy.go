package chattest

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// Proxy forwards TCP connections to a server address, and can fail them
// on demand, to stage network trouble between a client and a server.
type Proxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu     sync.Mutex
	hold   bool
	conns  map[net.Conn]struct{}
	frozen []*atomic.Bool // one per connection, for its server-to-client half
}

// NewProxy forwards a random 127.0.0.1 port to target.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// URL is the ws:// URL to give the client.
func (p *Proxy) URL() string { return "ws://" + p.ln.Addr().String() }

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
// now on, while the client's frames still reach it: the client's view of
// the room stops. New connections are not frozen.
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
		p.mu.Lock()
		hold := p.hold
		p.mu.Unlock()
		if hold {
			client.Close()
			continue
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		frozen := new(atomic.Bool)
		p.mu.Lock()
		p.conns[client] = struct{}{}
		p.conns[server] = struct{}{}
		p.frozen = append(p.frozen, frozen)
		p.mu.Unlock()
		p.wg.Add(2)
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
		p.mu.Unlock()
	}()
	if frozen == nil {
		io.Copy(dst, src)
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

package natstest

import (
	"strings"
	"testing"

	"github.com/agentforeman/foreman/internal/testkit/tcpproxy"
)

// Proxy forwards TCP connections to a NATS server and can cut them, to
// part one client from NATS while it keeps everything else.
type Proxy struct{ p *tcpproxy.Proxy }

// NewProxy forwards a random 127.0.0.1 port to the server at url.
func NewProxy(t testing.TB, url string) *Proxy {
	return &Proxy{tcpproxy.New(t, strings.TrimPrefix(url, "nats://"))}
}

// URL is the nats:// URL to give the client.
func (p *Proxy) URL() string { return "nats://" + p.p.Addr() }

// Cut closes every connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.p.Hold()
	p.p.Cut()
}

// Restore accepts connections again.
func (p *Proxy) Restore() { p.p.Release() }

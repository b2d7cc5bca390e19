package chattest

import (
	"testing"

	"github.com/agentforeman/foreman/internal/testkit/tcpproxy"
)

// Proxy stands between a chat client and the server, and can hold, freeze
// or cut their connections on demand.
type Proxy struct{ *tcpproxy.Proxy }

// NewProxy forwards a random 127.0.0.1 port to target (host:port).
func NewProxy(t testing.TB, target string) *Proxy { return &Proxy{tcpproxy.New(t, target)} }

// URL is the ws:// URL to give the client.
func (p *Proxy) URL() string { return "ws://" + p.Addr() }

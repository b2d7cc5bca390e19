package agentchat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// wsConn is one WebSocket connection with gorilla's one-reader,
// one-writer discipline: a goroutine reads and decodes frames, another
// writes, and the session talks to both through channels.
type wsConn struct {
	ws           *websocket.Conn
	in           chan incoming
	out          chan outFrame
	gate         func() bool
	done         chan struct{}
	closeOnce    sync.Once
	wg           sync.WaitGroup
	readTimeout  time.Duration
	writeTimeout time.Duration
}

// outFrame is a frame to write; line marks a message to the room, which
// the gate may hold back.
type outFrame struct {
	data []byte
	line bool
}

type incoming struct {
	f   *frame
	err error
}

// maxIncoming bounds what the client accepts in one frame; the server's own
// limit for what it receives is 2 MiB, and it sends nothing bigger than a
// message it accepted plus its envelope.
const maxIncoming = 8 << 20

func dial(ctx context.Context, url string, cfg *Config) (*wsConn, error) {
	d := websocket.Dialer{HandshakeTimeout: cfg.WriteTimeout, Proxy: http.ProxyFromEnvironment}
	ws, resp, err := d.DialContext(ctx, url, nil)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("connecting to %s: %w (HTTP %s)", url, err, resp.Status)
		}
		return nil, fmt.Errorf("connecting to %s: %w", url, err)
	}
	c := &wsConn{
		ws:           ws,
		in:           make(chan incoming, 64),
		out:          make(chan outFrame, 16),
		gate:         cfg.Gate,
		done:         make(chan struct{}),
		readTimeout:  cfg.ReadTimeout,
		writeTimeout: cfg.WriteTimeout,
	}
	ws.SetReadLimit(maxIncoming)
	c.extendRead()
	ws.SetPingHandler(func(data string) error {
		c.extendRead()
		err := ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(c.writeTimeout))
		if errors.Is(err, websocket.ErrCloseSent) {
			return nil
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil
		}
		return err
	})
	ws.SetPongHandler(func(string) error { c.extendRead(); return nil })
	c.wg.Add(2)
	go c.readLoop()
	go c.writeLoop(cfg.PingInterval)
	return c, nil
}

func (c *wsConn) extendRead() { c.ws.SetReadDeadline(time.Now().Add(c.readTimeout)) }

func (c *wsConn) readLoop() {
	defer c.wg.Done()
	for {
		_, data, err := c.ws.ReadMessage()
		var in incoming
		if err != nil {
			in.err = err
		} else {
			c.extendRead()
			in.f = decodeFrame(data)
		}
		select {
		case c.in <- in:
		case <-c.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (c *wsConn) writeLoop(ping time.Duration) {
	defer c.wg.Done()
	var tick <-chan time.Time
	if ping > 0 {
		t := time.NewTicker(ping)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case f := <-c.out:
			if f.line && c.gate != nil && !c.gate() {
				continue // checked as late as can be: the next step is the socket
			}
			c.ws.SetWriteDeadline(time.Now().Add(c.writeTimeout))
			if err := c.ws.WriteMessage(websocket.TextMessage, f.data); err != nil {
				c.ws.Close() // the reader then reports the failure
				return
			}
		case <-tick:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.writeTimeout)); err != nil {
				c.ws.Close()
				return
			}
		case <-c.done:
			return
		}
	}
}

// send queues one frame. It fails only when the connection is closed.
func (c *wsConn) send(v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep frames as small as the content allows
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, line := v.(msgFrame)
	select {
	case c.out <- outFrame{data: bytes.TrimRight(buf.Bytes(), "\n"), line: line}:
		return nil
	case <-c.done:
		return net.ErrClosed
	}
}

// close ends the connection; polite sends a normal closure first.
func (c *wsConn) close(polite bool) {
	c.closeOnce.Do(func() {
		close(c.done)
		if polite {
			c.ws.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		}
		c.ws.Close()
		c.wg.Wait()
	})
}

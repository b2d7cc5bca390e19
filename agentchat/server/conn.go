package server

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// conn is one client connection: a reader goroutine that hands frames to
// the server under its lock, and a writer goroutine that drains out.
type conn struct {
	srv      *Server
	ws       *websocket.Conn
	remote   string
	out      chan item
	quit     chan struct{}
	quitOnce sync.Once
	closing  atomic.Bool // a close frame is sent; pongs no longer extend the read deadline

	// Under srv.mu.
	gone      bool
	agent     *agent
	challenge *challenge
	holding   bool // signed in, WELCOME held while an older session is displaced
	lastMsg   time.Time
	lastNick  time.Time   // the last SET_NICK that took
	frames    []time.Time // arrival times within the flood window
}

// item is a frame to write, or a close frame to end with.
type item struct {
	data      []byte
	closeCode int
	closeText string
}

// outQueue bounds what waits for a slow client; a stock server buffers
// without bound, but a client this far behind is not reading at all.
const outQueue = 4096

const writeWait = 10 * time.Second

func newConn(s *Server, ws *websocket.Conn, remote string) *conn {
	return &conn{srv: s, ws: ws, remote: remote, out: make(chan item, outQueue), quit: make(chan struct{})}
}

func (c *conn) readLoop() {
	s := c.srv
	defer s.wg.Done()
	defer c.finish()
	c.ws.SetReadLimit(s.cfg.MaxFrame)
	c.ws.SetReadDeadline(time.Now().Add(s.cfg.PongTimeout))
	c.ws.SetPongHandler(func(string) error {
		if !c.closing.Load() {
			c.ws.SetReadDeadline(time.Now().Add(s.cfg.PongTimeout))
		}
		return nil
	})
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			if errors.Is(err, websocket.ErrReadLimit) {
				// gorilla has sent close 1009. Read what the client is
				// still sending, so closing does not reset the connection
				// before the client has read the close frame.
				c.drain()
			}
			return
		}
		s.handle(c, data)
	}
}

func (c *conn) drain() {
	nc := c.ws.NetConn()
	nc.SetReadDeadline(time.Now().Add(time.Second))
	io.Copy(io.Discard, nc)
}

// finish runs when the reader stops, for whatever reason.
func (c *conn) finish() {
	s := c.srv
	s.mu.Lock()
	s.detach(c)
	delete(s.conns, c)
	s.mu.Unlock()
	c.quitOnce.Do(func() { close(c.quit) })
	c.ws.Close()
}

func (c *conn) writeLoop() {
	s := c.srv
	defer s.wg.Done()
	ping := time.NewTicker(s.cfg.PingInterval)
	defer ping.Stop()
	for {
		select {
		case it := <-c.out:
			c.ws.SetWriteDeadline(time.Now().Add(writeWait))
			if it.closeCode != 0 {
				c.closing.Store(true)
				c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(it.closeCode, it.closeText), time.Now().Add(writeWait))
				// Wait a moment for the client's answering close frame;
				// the reader then ends the connection.
				c.ws.SetReadDeadline(time.Now().Add(time.Second))
				return
			}
			if err := c.ws.WriteMessage(websocket.TextMessage, it.data); err != nil {
				c.ws.Close()
				return
			}
		case <-ping.C:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)); err != nil {
				c.ws.Close()
				return
			}
		case <-c.quit:
			return
		}
	}
}

// enqueue hands an item to the writer; under srv.mu.
func (c *conn) enqueue(it item) {
	select {
	case c.out <- it:
	default:
		c.srv.log.Warn().Msgf("cut off %s: it stopped reading", c.who())
		c.ws.Close()
	}
}

// send queues a frame unless the connection is on its way out; under srv.mu.
func (c *conn) send(data []byte) {
	if !c.gone {
		c.enqueue(item{data: data})
	}
}

func (c *conn) who() string {
	if c.agent != nil {
		return c.agent.id + " (" + c.agent.name + ")"
	}
	return "a connection from " + c.remote
}

// flood records a frame and says whether the connection is within its
// limit; under srv.mu.
func (c *conn) flood(now time.Time) bool {
	cfg := &c.srv.cfg
	cutoff := now.Add(-cfg.FloodWindow)
	keep := c.frames[:0]
	for _, t := range c.frames {
		if t.After(cutoff) {
			keep = append(keep, t)
		}
	}
	c.frames = append(keep, now)
	limit := cfg.FloodPreIdentify
	if c.agent != nil {
		limit = cfg.FloodFrames
	}
	return len(c.frames) <= limit
}

package web

import (
	"context"
	"net"
)

// Start listens on addr and serves a new board there until stop is called;
// stop returns once the server has shut down. Listening comes first, so a
// taken port is an error here and not a log line later.
func Start(addr string, opts Options) (s *Server, url string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", nil, err
	}
	s = New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := s.Serve(ctx, ln); err != nil {
			s.opts.Logger.Error().Err(err).Msg("the board's server failed")
		}
	}()
	return s, URL(ln.Addr()), func() { cancel(); <-served }, nil
}

package web

import (
	"log"
	"strings"

	"github.com/rs/zerolog"
)

// newErrorLog routes net/http's own complaints (accept failures, a client
// speaking TLS to a plain port) into foreman's log instead of stderr.
func newErrorLog(l zerolog.Logger) *log.Logger {
	return log.New(logWriter{l}, "", 0)
}

type logWriter struct{ l zerolog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.l.Warn().Str("part", "http").Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}

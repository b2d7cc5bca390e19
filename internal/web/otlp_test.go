package web

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/otlp"
)

type noSpend struct{}

func (noSpend) Spend(context.Context, []coordinator.Spend) error { return nil }

// The board's server has no ReadTimeout of its own (its streams are long
// requests): the OTLP receiver's deadline on a body holds under it, so an
// export whose body trickles in is cut off, and its slot given back.
func TestTheBoardCutsOffAnExportWhoseBodyDoesNotCome(t *testing.T) {
	rcv := otlp.New(otlp.Options{Tokens: map[string]string{"tok-b1-0123456789": "@b1"}, MaxInFlight: 1, ReadTimeout: 50 * time.Millisecond}, noSpend{})
	s := New(Options{OTLP: rcv.Handler()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln := listen(t)
	go func() { _ = s.Serve(ctx, ln) }()

	conn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /v1/logs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok-b1-0123456789\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(time.Minute))) // the test's own bound, far past the receiver's
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "no answer within a minute: the body is waited for past the receiver's ReadTimeout")
	assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	assert.EqualValues(t, 1, rcv.Counts().Refused[otlp.RefusedBody])
	assert.EqualValues(t, 0, rcv.Counts().InFlight, "the slot is given back")
}

package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What board-login says is signed with the operator's key, so it reads
// each line the board hands it again: whatever answers at the board's
// address (another process on its port, a mistyped --board) gets only an
// operator's commands said, one line each, and the first other line ends
// the relay with nothing of it said.
func TestRelaySaysOnlyOperatorCommands(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		said  []string
	}{
		{"an operator's commands", []string{"RESOLVE db", "PAUSE"}, []string{"RESOLVE db", "PAUSE"}},
		{"a builder's line", []string{"RESOLVE db", "CLAIM api"}, []string{"RESOLVE db"}},
		{"two lines in one, made one", []string{"RESOLVE db\nCLAIM api"}, []string{"RESOLVE db CLAIM api"}},
		{"chat", []string{"the build is fine, merge everything"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			served := false
			board := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if served {
					<-r.Context().Done()
					return
				}
				served = true
				_ = json.NewEncoder(w).Encode(RelayAnswer{Lines: tc.lines})
			}))
			defer board.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var said []string
			err := Relay(ctx, board.URL, "token", func(line string) error {
				said = append(said, line)
				if len(said) == len(tc.lines) {
					cancel()
				}
				return nil
			})
			assert.Equal(t, tc.said, said)
			if len(tc.said) < len(tc.lines) {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "nothing said")
			}
		})
	}
}

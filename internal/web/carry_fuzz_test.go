package web

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/protocol"
)

// FuzzBoardState: whatever the board's saved state holds (board.json, a
// file on disk that anything may have written), the board loads it or
// starts empty saying why, and then survives every reply foreman says.
func FuzzBoardState(f *testing.F) {
	f.Add([]byte(`{"log":[],"counts":{"room":{},"journal_commits":0,"journal_entries":0,"replies":{"ACK":1},"heard":1,"events":2}}`))
	f.Add([]byte(`{"log":[{"seq":1,"at":"2026-01-01T00:00:00Z","text":"TASKS db"}],"escalations":{"db":{}},"names":{"@b1":"alice"},"counts":{"room":{},"escalations":{"hard-blocker":2}}}`))
	f.Add([]byte(`{"counts":{"replies":null,"escalations":null}}`))
	f.Add([]byte(`{not json`))
	f.Add([]byte(`null`))
	replies := []protocol.Reply{
		protocol.Tasks([]string{"db", "api"}),
		protocol.Ack("db", "@b1", ""),
		protocol.Escalate("db", protocol.HardBlocker, "missing_dependency: x", "RESOLVE db"),
		protocol.Escalate(protocol.BuildSubject, protocol.Overtime, "2h", ""),
		protocol.Review("db", "@b1", "pr/1"),
		protocol.Fix("db", "@b1", 1, 3, "tests"),
		protocol.Retry("db", "@b1"),
		protocol.Timeout("db", "@b1"),
		protocol.MergedLine("db"),
		protocol.Error(protocol.BuildSubject, "a gap"),
		protocol.Complete("shop"),
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file := filepath.Join(t.TempDir(), "board.json")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		s := New(Options{StateFile: file})
		s.Attach(&fakeSource{view: shopView()})
		for _, r := range replies {
			s.Observe(tick(t0), said(t0, r))
		}
		s.Observe(&coordinator.Event{Kind: coordinator.KindStart, At: t0}, said(t0, protocol.Tasks([]string{"db"})))
		s.Handled(0, 1)
		s.Named("@b1", "alice")
	})
}

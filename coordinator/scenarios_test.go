package coordinator_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/protocol"
	"github.com/agentforeman/foreman/transcript"
)

// Every scenario under testdata replays (the engine's rules, one transcript
// each, beside the engine), and rewriting it from what the
// engine said changes nothing.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			require.NoError(t, err)
			tr, err := transcript.Parse(file, bytes.NewReader(src))
			require.NoError(t, err)
			res, err := transcript.Replay(tr)
			require.NoError(t, err)
			if !res.Passed() {
				var diff strings.Builder
				res.WriteDiff(&diff)
				t.Fatalf("replay failed:\n%s", diff.String())
			}
			again, err := transcript.Parse(file, bytes.NewReader(res.Update()))
			require.NoError(t, err)
			res2, err := transcript.Replay(again)
			require.NoError(t, err)
			assert.True(t, res2.Passed(), "an updated transcript replays")
		})
	}
}

// The scenarios together use every verb, say every reply and every
// escalation code: a rule with no scenario would be a rule nobody checks.
func TestScenariosCoverTheContract(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	require.NoError(t, err)
	heard, said := map[string]bool{}, map[string]bool{}
	for _, file := range files {
		f, err := os.Open(file)
		require.NoError(t, err)
		tr, err := transcript.Parse(file, f)
		f.Close()
		require.NoError(t, err)
		for _, l := range tr.Lines {
			words := strings.Fields(strings.ToUpper(l.Text))
			if len(words) == 0 {
				continue
			}
			if l.Said {
				said[words[0]] = true
				if words[0] == protocol.ReplyEscalate.String() && len(words) > 2 {
					said["ESCALATE "+strings.ToLower(words[2])] = true
				}
			} else {
				heard[words[0]] = true
			}
		}
	}
	for _, v := range protocol.Verbs() {
		assert.True(t, heard[v.String()], "no scenario says %s", v)
	}
	for _, r := range protocol.ReplyVerbs() {
		assert.True(t, said[r.String()], "no scenario expects %s", r)
	}
	for _, code := range protocol.Escalations() {
		assert.True(t, said["ESCALATE "+string(code)], "no scenario expects ESCALATE ... %s", code)
	}
}

// Every ACK after a departure in the scenarios reads back as the handover
// it is (protocol.ReadHandover, which a host reads foreman's ACKs with):
// who left, why, and the branch when one was named.
func TestHandoversReadBack(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	require.NoError(t, err)
	handovers, branches := 0, 0
	for _, file := range files {
		f, err := os.Open(file)
		require.NoError(t, err)
		tr, err := transcript.Parse(file, f)
		f.Close()
		require.NoError(t, err)
		for _, l := range tr.Lines {
			h, err := protocol.ReadReply(l.Text)
			if !l.Said || err != nil || h.Verb != protocol.ReplyAck || !strings.Contains(h.Text, "after ") {
				continue
			}
			got, ok := protocol.ReadHandover(h.Text)
			require.True(t, ok, "%s:%d: %s", file, l.Pos, l.Text)
			assert.True(t, protocol.ValidAgent(got.From), l.Text)
			handovers++
			if b, ok := protocol.HandedBranch(h.Text); ok {
				assert.Equal(t, b, got.Branch, l.Text)
				branches++
			}
		}
	}
	assert.Positive(t, handovers)
	assert.Positive(t, branches)
}

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentforeman/foreman/internal/testkit/fulldisk"
	"github.com/agentforeman/foreman/internal/testkit/gittest"
)

// An agent's clone that fills the disk stops foreman up before anything
// has joined the room, with the workspace's one line (the disk is full,
// where to free space) as up's own, said once, and nothing started.
func TestUpRefusesAFullDiskInOneLine(t *testing.T) {
	w := newUpWorld(t)
	const blob = 2 << 20
	repo := gittest.Init(t, filepath.Join(w.dir, "big"))
	gittest.CommitRandom(t, repo, "big", blob)
	disk := fulldisk.Mount(t, 4*blob)
	fulldisk.Fill(t, disk, blob/2)
	room, board := freeAddr(t), freeAddr(t)
	// The journal on the full disk: the agents' workspaces are beside it.
	// host.sandbox off: foreman's copy for confined agents would fill it
	// first.
	journal := filepath.Join(disk, "journal")
	code, out, errOut := foreman(t, "up", w.config("full", room, board, journal, "big",
		"  sandbox: off\nagents:\n  - name: b1\n    role: builder\n    command: [sleep, \"1000\"]\n"))
	// Its log says the agents run unconfined; its refusal is one line, the last.
	assert.Equal(t, 1, code)
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	assert.Equal(t, 1, strings.Count(errOut, "foreman: "), "said once: %q", errOut)
	last := lines[len(lines)-1]
	assert.True(t, strings.HasPrefix(last, "foreman: agent b1: cannot clone host.repo "+repo+" (branch main) into its workspace: the disk is full (git: fatal: "), last)
	assert.True(t, strings.HasSuffix(last, "); free space where its workspace is, at "+filepath.Join(disk, "agents", "b1")+", then start foreman up again"), last)
	assert.NotContains(t, out, "disk is full", "said once")
	w.notHalfStarted([]string{room, board}, journal, repo)
	assert.NoDirExists(t, filepath.Join(disk, "agents", "b1", "work.part"))
}

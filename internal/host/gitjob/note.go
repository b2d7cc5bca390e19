package gitjob

import (
	"bytes"
	"context"
	"os"
	"path/filepath"

	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/host/receipt"
)

// note does a Note job: a landing whose note a stop or a crash cut off.
// If j.Commit is on the target, its receipt becomes its note (Landed);
// if not, that landing was never made (Moved).
func (r *Runner) note(ctx context.Context, j host.Job) host.Outcome {
	now, bad := r.base(ctx)
	if bad != nil {
		return *bad
	}
	landed, err := r.o.Repo.IsAncestor(ctx, j.Commit, now)
	if err != nil {
		return retry(err)
	}
	if !landed {
		return host.Outcome{Result: host.Moved, Target: now}
	}
	o := host.Outcome{Result: host.Landed, Commit: j.Commit, Already: true}
	if err := r.writeNote(ctx, j); err != nil {
		return retry(err)
	}
	o.Noted = true
	o.ReceiptFile = r.receiptFile(j)
	return o
}

// keepReceipt writes a landing's receipt as its commit's note, and a copy
// beside the logs for the board; a note that cannot be written now is the
// core's to have written later (o.Noted stays false).
func (r *Runner) keepReceipt(ctx context.Context, j host.Job, o *host.Outcome) {
	if len(j.Receipt) == 0 {
		return
	}
	o.Noted = r.writeNote(ctx, j) == nil
	o.ReceiptFile = r.receiptFile(j)
}

// writeNote makes j.Receipt the note of j.Commit. A landing writes it
// once; a Note job, settling a landing cut short, first looks whether it
// is there already.
func (r *Runner) writeNote(ctx context.Context, j host.Job) error {
	if j.Kind == host.Note {
		if have, err := r.o.Repo.Note(ctx, receipt.NotesRef, j.Commit); err == nil && bytes.Equal(bytes.TrimSpace(have), bytes.TrimSpace(j.Receipt)) {
			return nil
		}
	}
	return r.o.Repo.AddNote(ctx, receipt.NotesRef, j.Commit, j.Receipt)
}

// receiptFile writes a copy of the receipt into host.logs, where the board
// serves it, and names it ("" if it cannot be written).
func (r *Runner) receiptFile(j host.Job) string {
	name := SafeName(j.Component) + "-" + short(j.Commit) + ".receipt.json"
	if err := os.WriteFile(filepath.Join(r.o.Logs, name), append(bytes.TrimSpace(j.Receipt), '\n'), 0o644); err != nil {
		return ""
	}
	return name
}

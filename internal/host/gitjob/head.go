package gitjob

import (
	"context"

	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/host/receipt"
)

// head does a Head job: the host's signed head (j.Receipt) becomes what
// receipt.HeadRef of the target names, a blob, where foreman verify reads
// it. The core writes one at a time, so a newer one is never overwritten
// by an older.
func (r *Runner) head(ctx context.Context, j host.Job) host.Outcome {
	blob, err := r.o.Repo.WriteBlob(ctx, j.Receipt)
	if err != nil {
		return retry(err)
	}
	if err := r.o.Repo.SetRef(ctx, receipt.HeadRef(r.o.Target), blob, "foreman host: signed head"); err != nil {
		return retry(err)
	}
	return host.Outcome{Result: host.Landed, Commit: j.Commit}
}

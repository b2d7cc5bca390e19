package hostsim

import (
	"context"
	"errors"
	"strings"

	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/host/receipt"
)

// history is the simulated repository as foreman verify reads a real one
// (verify.Repository), so that the one invariant checker (package
// invariant) judges it. pending adds the receipts the host's ledger holds
// for landings whose note a kill cut off: a Note job writes exactly those
// once the host is back, so between steps the promise is judged on them;
// at the end, on the notes alone.
type history struct {
	r       *repo
	pending map[string][]byte // landed commit -> its receipt, from the ledger
	blobs   map[string][]byte
}

func (r *repo) history(ledger []host.Record, withPending bool) *history {
	h := &history{r: r, pending: map[string][]byte{}, blobs: map[string][]byte{}}
	if withPending {
		for _, rec := range ledger {
			if rec.Op == host.OpReceipt && r.landed[rec.Commit].component != "" && r.notes[rec.Commit] == nil {
				h.pending[rec.Commit] = rec.Receipt
			}
		}
	}
	return h
}

func (h *history) Dir() string { return "the simulated repository" }

func (h *history) RevParse(_ context.Context, name string) (string, error) {
	name = strings.TrimSuffix(name, "^{commit}")
	if id, ok := h.r.refs[strings.TrimPrefix(name, "refs/heads/")]; ok {
		return id, nil
	}
	if h.r.commits[name] != nil {
		return name, nil
	}
	return "", nil
}

func (h *history) IsAncestor(_ context.Context, a, b string) (bool, error) {
	return h.r.isAncestor(a, b), nil
}

func (h *history) FirstParents(_ context.Context, head, since string) ([]gitrepo.Commit, error) {
	var out []gitrepo.Commit
	for id := head; id != "" && id != since; {
		c := h.r.commits[id]
		if c == nil {
			return nil, errors.New("no commit " + id)
		}
		subject := "a commit"
		if h.r.byHand[id] {
			subject = "a fix by hand"
		}
		out = append(out, gitrepo.Commit{ID: id, Tree: c.tree, Parents: c.parents, Author: "sim <sim@example.com>", Subject: subject})
		id = ""
		if len(c.parents) > 0 {
			id = c.parents[0]
		}
	}
	return out, nil
}

// Notes names each note's blob by its content, as git does.
func (h *history) Notes(_ context.Context, _ string) (map[string]string, error) {
	out := map[string]string{}
	add := func(commit string, note []byte) {
		id := h.r.blobID(note)
		h.blobs[id] = note
		out[commit] = id
	}
	for commit, note := range h.r.notes {
		add(commit, note)
	}
	for commit, note := range h.pending {
		add(commit, note)
	}
	return out, nil
}

func (h *history) Blobs(_ context.Context, ids []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, id := range ids {
		if b, ok := h.blobs[id]; ok {
			out[id] = b
		}
	}
	return out, nil
}

func (h *history) MergeTree(context.Context, string, string) (gitrepo.Merge, error) {
	return gitrepo.Merge{}, errors.New("the simulated host lands by merge only")
}

func (h *history) Refs(_ context.Context, prefix string) (map[string]string, error) {
	out := map[string]string{}
	if ref := receipt.HeadRef("main"); strings.HasPrefix(ref, prefix) && h.r.head != nil {
		id := h.r.blobID(h.r.head)
		h.blobs[id] = h.r.head
		out[ref] = id
	}
	return out, nil
}

// blobID names data as git names a blob, by its content (remembered: the
// same receipts are named after every step).
func (r *repo) blobID(data []byte) string {
	if r.blobIDs == nil {
		r.blobIDs = map[string]string{}
	}
	if id, ok := r.blobIDs[string(data)]; ok {
		return id
	}
	id := digest("blob", string(data))
	r.blobIDs[string(data)] = id
	return id
}

package gitrepo

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
)

// ErrNoNote means a commit has no note under the notes ref asked.
var ErrNoNote = errors.New("no note")

// Note is the note of commit under ref (refs/notes/...): ErrNoNote when it
// has none.
func (r *Repo) Note(ctx context.Context, ref, commit string) ([]byte, error) {
	out, code, err := r.run(ctx, r.dir, nil, "notes", "--ref", ref, "show", "--end-of-options", commit)
	if err != nil && code == 1 && strings.Contains(err.Error(), "no note found") {
		return nil, ErrNoNote
	}
	return []byte(out), err
}

// AddNote makes data the note of commit under ref, replacing any it had.
func (r *Repo) AddNote(ctx context.Context, ref, commit string, data []byte) error {
	_, _, err := r.run(ctx, r.dir, data, "notes", "--ref", ref, "add", "--force", "--file", "-", "--end-of-options", commit)
	return err
}

// Notes lists the notes under ref: each annotated commit with its note's
// blob. None (no error) when ref does not exist.
func (r *Repo) Notes(ctx context.Context, ref string) (map[string]string, error) {
	if tip, err := r.RevParse(ctx, ref); err != nil || tip == "" {
		return map[string]string{}, err
	}
	out, err := r.git(ctx, "notes", "--ref", ref, "list")
	if err != nil {
		return nil, err
	}
	notes := map[string]string{}
	for line := range strings.Lines(out) {
		blob, commit, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok {
			notes[commit] = blob
		}
	}
	return notes, nil
}

// Commit is one commit of a first-parent walk.
type Commit struct {
	ID      string
	Tree    string
	Parents []string // the first is the first parent
	Author  string   // name <email>
	Subject string
}

// FirstParents walks head's first-parent history, newest first, down to
// (not including) since, or to the root when since is "".
func (r *Repo) FirstParents(ctx context.Context, head, since string) ([]Commit, error) {
	args := []string{"log", "--first-parent", "--format=%H%x00%T%x00%P%x00%an <%ae>%x00%s%x00", "--end-of-options", head}
	if since != "" {
		args = append(args, "^"+since)
	}
	out, err := r.git(ctx, args...)
	if err != nil {
		return nil, err
	}
	var commits []Commit
	fields := strings.Split(out, "\x00")
	for i := 0; i+5 <= len(fields); i += 5 {
		c := Commit{ID: strings.TrimSpace(fields[i]), Tree: fields[i+1], Parents: strings.Fields(fields[i+2]),
			Author: fields[i+3], Subject: fields[i+4]}
		if c.ID == "" {
			break
		}
		commits = append(commits, c)
	}
	return commits, nil
}

// Blobs reads blobs by id, all through one git cat-file --batch.
func (r *Repo) Blobs(ctx context.Context, ids []string) (map[string][]byte, error) {
	out := make(map[string][]byte, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	cmd := exec.CommandContext(ctx, "git", append(append([]string{}, fixed...), "cat-file", "--batch")...)
	cmd.Dir, cmd.Env = r.dir, r.env
	cmd.Stdin = strings.NewReader(strings.Join(ids, "\n") + "\n")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	rd := bufio.NewReader(stdout)
	for _, id := range ids {
		head, err := rd.ReadString('\n')
		if err != nil {
			_ = cmd.Wait()
			return nil, fmt.Errorf("git cat-file: %v %s", err, strings.TrimSpace(stderr.String()))
		}
		f := strings.Fields(head)
		if len(f) == 2 && f[1] == "missing" {
			continue
		}
		if len(f) != 3 {
			_ = cmd.Wait()
			return nil, fmt.Errorf("git cat-file said %q", head)
		}
		size, err := strconv.Atoi(f[2])
		if err != nil {
			_ = cmd.Wait()
			return nil, fmt.Errorf("git cat-file said %q", head)
		}
		data := make([]byte, size+1) // and its newline
		if _, err := io.ReadFull(rd, data); err != nil {
			_ = cmd.Wait()
			return nil, err
		}
		out[id] = data[:size]
	}
	return out, cmd.Wait()
}

// WriteBlob stores data as a blob and names it.
func (r *Repo) WriteBlob(ctx context.Context, data []byte) (string, error) {
	out, _, err := r.run(ctx, r.dir, data, "hash-object", "-w", "--stdin")
	return strings.TrimSpace(out), err
}

// CommitOf reads one commit: its tree, parents, author and subject.
func (r *Repo) CommitOf(ctx context.Context, id string) (Commit, error) {
	out, err := r.git(ctx, "log", "-1", "--no-walk", "--format=%H%x00%T%x00%P%x00%an <%ae>%x00%s%x00", "--end-of-options", id+"^{commit}")
	if err != nil {
		return Commit{}, err
	}
	f := strings.Split(out, "\x00")
	if len(f) < 5 {
		return Commit{}, fmt.Errorf("git log said %q of %s", out, id)
	}
	return Commit{ID: strings.TrimSpace(f[0]), Tree: f[1], Parents: strings.Fields(f[2]), Author: f[3], Subject: f[4]}, nil
}

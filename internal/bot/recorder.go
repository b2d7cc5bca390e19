package bot

import (
	"os"
	"time"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/protocol"
	"github.com/agentforeman/foreman/transcript"
)

// recorder writes the session as a transcript (contract section 9) that
// `foreman replay` reproduces: every line heard and said, at the engine's
// times relative to the build's start, with foreman's own directives for a
// restart's downtime and for reloads. After a restart it appends.
type recorder struct {
	f     *os.File
	w     *transcript.Writer
	start func() time.Time
}

func openRecorder(path string, cfg coordinator.Config, start func() time.Time) (*recorder, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	r := &recorder{f: f, start: start}
	if info.Size() == 0 {
		r.w = transcript.NewWriter(f, cfg)
	} else {
		r.w = transcript.AppendWriter(f, cfg.Self)
		r.w.Comment("foreman restarted")
	}
	return r, nil
}

func (r *recorder) since(at time.Time) time.Duration { return at.Sub(r.start()) }

func (r *recorder) heard(at time.Time, sender, content string) {
	for line := range protocol.Lines(content) {
		r.w.Heard(r.since(at), sender, line)
	}
}

func (r *recorder) said(at time.Time, lines []string) { r.w.Said(r.since(at), lines) }

func (r *recorder) downtime(from, to time.Time) { r.w.Downtime(r.since(from), r.since(to)) }

func (r *recorder) reload(at time.Time, comps []coordinator.Component) {
	r.w.Reload(r.since(at), comps)
}

func (r *recorder) flush() error { return r.w.Flush() }

func (r *recorder) close() error {
	err := r.w.Flush()
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	return err
}

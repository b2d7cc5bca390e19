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
// restart's downtime, reloads and the members the room showed. After a
// restart it appends.
type recorder struct {
	f     *os.File
	w     *transcript.Writer
	start func() time.Time
	last  time.Time // the engine's clock after the last event recorded
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

// event records one engine event and what the engine said; now is the
// engine's clock after it.
func (r *recorder) event(ev *coordinator.Event, said []coordinator.Reply, now time.Time) {
	before := r.last
	r.last = now
	switch ev.Kind {
	case coordinator.KindStart:
		r.w.ClaimAgain(ev.ClaimAgain)
	case coordinator.KindMessage:
		r.w.Named(r.since(now), ev.Msg.From, ev.Msg.Name)
		for line := range protocol.Lines(ev.Msg.Content) {
			r.w.Heard(r.since(now), ev.Msg.From, line)
		}
	case coordinator.KindRecover:
		if now.After(before) {
			r.w.Downtime(r.since(before), r.since(now))
		}
	case coordinator.KindReload:
		r.w.Reload(r.since(ev.At), ev.Components, ev.Roles)
	case coordinator.KindOffline:
		r.w.Offline(r.since(now))
	case coordinator.KindOnline:
		r.w.Online(r.since(now))
	case coordinator.KindGap:
		r.w.Gap(r.since(now), r.since(ev.Since), r.since(ev.Until))
	case coordinator.KindMembers:
		r.w.Members(r.since(now), ev.Members)
	case coordinator.KindSpend:
		r.w.Spend(r.since(ev.At), r.start(), ev.Spend)
	}
	for _, s := range said {
		r.w.Said(r.since(s.At), []string{s.Text})
	}
}

func (r *recorder) flush() error { return r.w.Flush() }

func (r *recorder) close() error {
	err := r.w.Flush()
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	return err
}

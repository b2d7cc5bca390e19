package agentchat

import "time"

// skew estimates theta, the server's clock minus ours plus the least time a
// frame takes to reach it: a MSG sent at our time t reaches the server no
// earlier than its time t+theta. Samples are the server's timestamp on
// each of our echoed MSGs minus when we sent it; the least of the recent
// ones is the estimate, so one slow echo does not make it late.
type skew struct {
	samples [32]time.Duration
	n, next int
}

func (s *skew) add(serverTS, sentAt time.Time) {
	if serverTS.IsZero() || sentAt.IsZero() {
		return
	}
	s.samples[s.next] = serverTS.Sub(sentAt)
	s.next = (s.next + 1) % len(s.samples)
	s.n = min(s.n+1, len(s.samples))
}

// local is the time on our clock at which a MSG sent reaches the server no
// earlier than its time ts; ok is false before the first sample.
func (s *skew) local(ts time.Time) (time.Time, bool) {
	if s.n == 0 || ts.IsZero() {
		return time.Time{}, false
	}
	theta := s.samples[0]
	for _, d := range s.samples[1:s.n] {
		theta = min(theta, d)
	}
	return ts.Add(-theta), true
}

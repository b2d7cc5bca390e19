package loadtest

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// Report is what one run measured. Durations are in microseconds and
// seconds in the JSON, so that a script can compare them as numbers.
type Report struct {
	Machine  Machine  `json:"machine"`
	Scenario Scenario `json:"scenario"`

	Agents   int `json:"agents"`
	Claims   int `json:"claims_sent"`
	Expected int `json:"acks_expected"`
	Acks     int `json:"acks_received"`
	Rejects  int `json:"rejects"`
	Errors   int `json:"errors"`
	Missing  int `json:"missing"`
	// Answers that were not an ACK, a few of them, as the bot said them.
	Refusals []string `json:"refusals,omitempty"`

	Latency Latency `json:"latency"`
	// Quarters is the p50 of each quarter of the ACKed claims in the order
	// sent: rising means the load outran the system.
	Quarters []int64 `json:"p50_by_quarter_us,omitempty"`
	// Echo is CLAIM to the claim's own echo from the room: the room's round
	// trip under the same load, with no bot in the path.
	Echo Latency `json:"echo_latency"`
	// AtServer is CLAIM to ACK by the server's own times on the two
	// messages (whole milliseconds): the bot's round trip from the server,
	// without the agents' side of the room.
	AtServer Latency `json:"server_latency"`
	// LastAckMicros is the time from the first CLAIM sent to the last ACK
	// received: for simultaneous claims, how long the whole burst took.
	LastAckMicros int64 `json:"last_ack_us"`

	RateLimited      int64    `json:"rate_limited_seen_by_agents"`
	AgentResent      int64    `json:"agent_messages_resent"`
	AgentDisconnects int64    `json:"agent_disconnects"`
	AgentErrors      []string `json:"agent_errors,omitempty"`

	Bot     BotStats     `json:"bot"`
	Harness HarnessStats `json:"harness"`

	JoinSeconds   float64 `json:"join_seconds"`   // all agents in the room
	ClaimsSeconds float64 `json:"claims_seconds"` // first CLAIM to last answer (or the timeout)

	Targets []Target `json:"targets,omitempty"`
	Dir     string   `json:"dir,omitempty"` // kept: the bot's config, log and journal
}

// Machine is where the run happened: figures mean little without it.
type Machine struct {
	CPUs      int    `json:"cpus"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	CPUModel  string `json:"cpu_model,omitempty"`
	GoVersion string `json:"go"`
}

// Scenario is how the run was set up.
type Scenario struct {
	Server       string  `json:"server"` // "embedded" or the URL
	RateLimit    string  `json:"rate_limit"`
	FloodLimit   int     `json:"flood_limit"` // -1: none
	Simultaneous bool    `json:"simultaneous"`
	SpreadSec    float64 `json:"spread_seconds,omitempty"`
	SettleSec    float64 `json:"settle_seconds"`
	Journal      bool    `json:"journal"`
}

// Latency is CLAIM to ACK as each agent saw it, over the ACKed claims.
type Latency struct {
	Count int   `json:"count"`
	P50   int64 `json:"p50_us"`
	P90   int64 `json:"p90_us"`
	P99   int64 `json:"p99_us"`
	Max   int64 `json:"max_us"`
	Mean  int64 `json:"mean_us"`
}

// BotStats is the bot process as /proc and its /metrics saw it.
type BotStats struct {
	Measured         bool    `json:"measured"` // false where /proc is missing: the CPU and memory figures are n/a
	CPUSeconds       float64 `json:"cpu_seconds"`
	ClaimsCPUSeconds float64 `json:"claims_cpu_seconds"` // during the claims only
	CPUPer1000Claims float64 `json:"cpu_seconds_per_1000_claims"`
	PeakRSSBytes     int64   `json:"peak_rss_bytes"`
	RSSBytes         int64   `json:"rss_bytes"`

	MessagesSent       int64   `json:"messages_sent"`
	ClaimsMessagesSent int64   `json:"claims_messages_sent"` // during the claims only
	LinesSent          int64   `json:"lines_sent"`
	Resent             int64   `json:"resent"`
	EventsHandled      int64   `json:"events_handled"`
	HandlingMeanMicros float64 `json:"handling_mean_us"` // per batch of events, journal write included
	Batches            int64   `json:"batches"`
	// ClaimsHandling is how long the bot took per batch of events during
	// the claims (handling, journal write and handing the replies to its
	// client), from its histogram: its own share of the latency, without
	// the room's.
	ClaimsHandling []Bucket `json:"claims_handling,omitempty"`
	// The journal during the claims: commits (one write and one fdatasync
	// each), the entries and the heard lines they held. Lines per commit
	// well above 1 is the journal batching under load.
	ClaimsCommits    int64   `json:"claims_journal_commits"`
	ClaimsEntries    int64   `json:"claims_journal_entries"`
	ClaimsLinesHeard int64   `json:"claims_lines_heard"`
	CommitsPerSecond float64 `json:"claims_commits_per_second"`
	LinesPerCommit   float64 `json:"claims_lines_per_commit"`
	MetricsError     string  `json:"metrics_error,omitempty"`
}

// HarnessStats is this process: the agents and, by default, the server.
// On a small machine they compete with the bot for the same CPUs.
type HarnessStats struct {
	CPUSeconds       float64 `json:"cpu_seconds"`
	ClaimsCPUSeconds float64 `json:"claims_cpu_seconds"`
}

// Target is one of the goals and whether this run met it.
type Target struct {
	Name string `json:"name"`
	Met  bool   `json:"met"`
	Got  string `json:"got"`
}

// OK reports whether every expected ACK arrived.
func (r *Report) OK() bool { return r.Missing == 0 && r.Acks == r.Expected }

func latencyOf(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Latency{
		Count: len(s),
		P50:   percentile(s, 50).Microseconds(),
		P90:   percentile(s, 90).Microseconds(),
		P99:   percentile(s, 99).Microseconds(),
		Max:   s[len(s)-1].Microseconds(),
		Mean:  (sum / time.Duration(len(s))).Microseconds(),
	}
}

// percentile is the nearest-rank percentile of sorted: the smallest value
// with at least p% of the values at or below it.
func percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}

// WriteText writes the report as a table for a person.
func (r *Report) WriteText(w io.Writer) {
	sc := r.Scenario
	mode := fmt.Sprintf("claims spread over %s", secs(sc.SpreadSec))
	if sc.Simultaneous {
		mode = "all claims at once"
	}
	limits := "no rate limit"
	if sc.RateLimit != "0s" {
		limits = "rate limit 1 message per " + sc.RateLimit
	}
	if sc.FloodLimit < 0 {
		limits += ", no flood limit"
	} else {
		limits += fmt.Sprintf(", flood limit %d frames per 10s", sc.FloodLimit)
	}
	journal := "journal on"
	if !sc.Journal {
		journal = "journal off"
	}
	fmt.Fprintf(w, "foreman bench: %d agents, %s server (%s), %s, %s\n", r.Agents, sc.Server, limits, mode, journal)
	m := r.Machine
	fmt.Fprintf(w, "machine: %d CPUs, %s/%s, %s, %s\n\n", m.CPUs, m.OS, m.Arch, orNA(m.CPUModel), m.GoVersion)

	row := func(k, format string, args ...any) { fmt.Fprintf(w, "  %-22s %s\n", k, fmt.Sprintf(format, args...)) }
	row("agents joined in", "%s", secs(r.JoinSeconds))
	row("claims sent", "%d (after a settle of %s)", r.Claims, secs(sc.SettleSec))
	row("ACKs received", "%d of %d (%d REJECT, %d ERROR, %d missing)", r.Acks, r.Expected, r.Rejects, r.Errors, r.Missing)
	for _, s := range r.Refusals {
		row("", "%s", s)
	}
	l := r.Latency
	if l.Count > 0 {
		row("CLAIM to ACK", "p50 %s  p90 %s  p99 %s  max %s  mean %s", us(l.P50), us(l.P90), us(l.P99), us(l.Max), us(l.Mean))
	} else {
		row("CLAIM to ACK", "n/a (no ACK)")
	}
	if len(r.Quarters) == 4 && !sc.Simultaneous {
		q := r.Quarters
		row("p50 by quarter", "%s  %s  %s  %s  (claims in the order sent)", us(q[0]), us(q[1]), us(q[2]), us(q[3]))
	}
	if e := r.Echo; e.Count > 0 {
		row("CLAIM to own echo", "p50 %s  p90 %s  p99 %s  max %s  (the room alone, no bot)", us(e.P50), us(e.P90), us(e.P99), us(e.Max))
	}
	if s := r.AtServer; s.Count > 0 {
		row("CLAIM to ACK at server", "p50 %s  p90 %s  p99 %s  max %s  (server timestamps, 1ms steps: the bot's part)", us(s.P50), us(s.P90), us(s.P99), us(s.Max))
	}
	if sc.Simultaneous && l.Count > 0 {
		row("last ACK after", "%s from the first CLAIM", us(r.LastAckMicros))
	}
	row("RATE_LIMITED", "%d seen by agents (%d agent messages resent); the bot resent %d", r.RateLimited, r.AgentResent, r.Bot.Resent)
	if r.AgentDisconnects > 0 {
		row("agent disconnects", "%d", r.AgentDisconnects)
	}
	for _, e := range r.AgentErrors {
		row("agent error", "%s", e)
	}
	b := r.Bot
	if b.MetricsError != "" {
		row("bot metrics", "n/a (%s)", b.MetricsError)
	} else {
		row("bot messages", "%d sent, %d during the claims; %d lines; %d events handled in %d batches (mean %s a batch)",
			b.MessagesSent, b.ClaimsMessagesSent, b.LinesSent, b.EventsHandled, b.Batches, us(int64(b.HandlingMeanMicros)))
		if b.ClaimsCommits > 0 {
			row("journal", "%d commits during the claims (%.0f a second), %.1f heard lines and %.1f entries a commit",
				b.ClaimsCommits, b.CommitsPerSecond, b.LinesPerCommit, float64(b.ClaimsEntries)/float64(b.ClaimsCommits))
		}
	}
	if len(b.ClaimsHandling) > 0 {
		var parts []string
		for _, k := range b.ClaimsHandling {
			pct := math.Round(100 * k.Share)
			parts = append(parts, fmt.Sprintf("<=%s %.0f%%", us(int64(k.LEMicros)), pct))
			if pct >= 100 { // the rest would only repeat it
				break
			}
		}
		row("bot handling a batch", "%s  (during the claims)", strings.Join(parts, ", "))
	}
	if b.Measured {
		row("bot CPU", "%.2f s total, %.2f s during the claims (%.2f s per 1000 claims)", b.CPUSeconds, b.ClaimsCPUSeconds, b.CPUPer1000Claims)
		row("bot memory", "peak RSS %s (at the end %s)", mib(b.PeakRSSBytes), mib(b.RSSBytes))
		row("harness CPU", "%.2f s total, %.2f s during the claims (agents and server, this process)", r.Harness.CPUSeconds, r.Harness.ClaimsCPUSeconds)
	} else {
		row("bot CPU", "n/a (no /proc on %s)", m.OS)
		row("bot memory", "n/a")
	}
	for _, t := range r.Targets {
		verdict := "NOT MET"
		if t.Met {
			verdict = "met"
		}
		row("target", "%s: %s (%s)", t.Name, verdict, t.Got)
	}
	if r.Dir != "" {
		row("kept", "%s (the bot's config, log and journal)", r.Dir)
	}
}

func orNA(s string) string {
	if s == "" {
		return "CPU model n/a"
	}
	return s
}

// us formats microseconds with a unit that suits their size.
func us(v int64) string {
	d := time.Duration(v) * time.Microsecond
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", v)
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(v)/1e3)
	default:
		return fmt.Sprintf("%.3fs", float64(v)/1e6)
	}
}

func secs(s float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", s), "0"), ".") + "s"
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

package coordinator

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MergeMode says who merges an approved component.
type MergeMode string

// Merge modes (contract section 7).
const (
	MergeAccept   MergeMode = "accept"   // AUDIT PASS merges; the bot says MERGED
	MergeExternal MergeMode = "external" // AUDIT PASS approves; an operator or the merger says MERGED
)

// OverlapMode says what an OVERLAP from the host does (contract section 10).
type OverlapMode string

// Overlap modes.
const (
	OverlapWarn OverlapMode = "warn" // recorded and shown; the host's line is the warning
	OverlapWait OverlapMode = "wait" // as c's builder's CONFLICT c d files: c waits for d
)

// Rules are the timings and counts of contract section 5. The key of each is
// the same in config files (under "rules:") and in transcripts ("!set").
type Rules struct {
	CheckinInterval   time.Duration // an owner checks in at least this often
	MissedCheckins    int           // intervals without a check-in before TIMEOUT
	AuditAttempts     int           // failed audits per builder before RETRY
	MaxBuilders       int           // builders barred from a component before audit-exhausted
	AuditTimeout      time.Duration // REVIEW without a verdict before audit-overdue
	PushbackRetries   int           // BLOCKED on one dep before need-info
	MaxClaimsPerAgent int           // components one agent may own at once
	CIGating          bool          // READY goes through CI before review
	CITimeout         time.Duration // ci state without a verdict counts a CI failure
	CIAttempts        int           // CI failures before ci-exhausted
	ConflictAttempts  int           // CI merge conflicts before ci-exhausted
	MaxBuildTime      time.Duration // after this, ESCALATE build overtime (0: never)
	Merge             MergeMode
	RequireVerified   bool        // ignore senders the room does not mark verified
	Overlap           OverlapMode // what the host's OVERLAP does (section 10)
}

// DefaultRules are the contract's defaults.
func DefaultRules() Rules {
	return Rules{
		CheckinInterval:   10 * time.Minute,
		MissedCheckins:    3,
		AuditAttempts:     3,
		MaxBuilders:       3,
		AuditTimeout:      5 * time.Minute,
		PushbackRetries:   3,
		MaxClaimsPerAgent: 1,
		CITimeout:         10 * time.Minute,
		CIAttempts:        5,
		ConflictAttempts:  3,
		MaxBuildTime:      2 * time.Hour,
		Merge:             MergeAccept,
		Overlap:           OverlapWarn,
	}
}

// Bounds of every rule. A value past them passes a type check and still
// breaks the run (missed_checkins: 20000000 overflowed the deadline and the
// bot spun), so they are checked where rules are set and where an engine
// is built.
const (
	// MaxDuration bounds every duration, and a check-in deadline
	// (checkin_interval x missed_checkins): a year.
	MaxDuration = 365 * 24 * time.Hour
	// MaxCount bounds every count.
	MaxCount = 1000
)

// rule ties a key to its field: one table serves Set, Get, Check and the
// list of keys, so a new rule is added in one place.
type rule struct {
	key string
	ptr func(*Rules) any // *time.Duration, *int, *bool, *MergeMode or *OverlapMode
	min int              // least value for counts
}

var rules = []rule{
	{"checkin_interval", func(r *Rules) any { return &r.CheckinInterval }, 0},
	{"missed_checkins", func(r *Rules) any { return &r.MissedCheckins }, 1},
	{"audit_attempts", func(r *Rules) any { return &r.AuditAttempts }, 1},
	{"max_builders", func(r *Rules) any { return &r.MaxBuilders }, 1},
	{"audit_timeout", func(r *Rules) any { return &r.AuditTimeout }, 0},
	{"pushback_retries", func(r *Rules) any { return &r.PushbackRetries }, 0},
	{"max_claims_per_agent", func(r *Rules) any { return &r.MaxClaimsPerAgent }, 1},
	{"ci_gating", func(r *Rules) any { return &r.CIGating }, 0},
	{"ci_timeout", func(r *Rules) any { return &r.CITimeout }, 0},
	{"ci_attempts", func(r *Rules) any { return &r.CIAttempts }, 1},
	{"conflict_attempts", func(r *Rules) any { return &r.ConflictAttempts }, 1},
	{"max_build_time", func(r *Rules) any { return &r.MaxBuildTime }, 0},
	{"merge", func(r *Rules) any { return &r.Merge }, 0},
	{"require_verified", func(r *Rules) any { return &r.RequireVerified }, 0},
	{"overlap", func(r *Rules) any { return &r.Overlap }, 0},
}

// check reports whether rl's value in r is within its bounds; the error
// names the key.
func (rl rule) check(r *Rules) error {
	switch p := rl.ptr(r).(type) {
	case *time.Duration:
		d := *p
		switch {
		case d < 0:
			return fmt.Errorf("%s: %s is negative (0 turns it off)", rl.key, d)
		case d == 0 && rl.key != "max_build_time":
			return fmt.Errorf("%s: must be a positive duration like 10m or 1h30m", rl.key)
		case d > MaxDuration:
			return fmt.Errorf("%s: %s is over the most allowed, %s (a year)", rl.key, d, MaxDuration)
		case d%time.Millisecond != 0:
			return fmt.Errorf("%s: %s is not a whole number of milliseconds, as the room's clock counts", rl.key, d)
		}
	case *int:
		switch n := *p; {
		case n < rl.min:
			return fmt.Errorf("%s: %d is below the least allowed, %d", rl.key, n, rl.min)
		case n > MaxCount:
			return fmt.Errorf("%s: %d is over the most allowed, %d", rl.key, n, MaxCount)
		}
	}
	return nil
}

// Check reports the first rule out of its bounds, naming its key: every
// rule alone, then the check-in deadline they make together.
func (r Rules) Check() error {
	for _, rl := range rules {
		if err := rl.check(&r); err != nil {
			return err
		}
	}
	// Divided, not multiplied: the product of two values within bounds can
	// overflow.
	if r.MissedCheckins > 0 && r.CheckinInterval > MaxDuration/time.Duration(r.MissedCheckins) {
		return fmt.Errorf("missed_checkins: %d x checkin_interval %s is a deadline over the most allowed, %s (a year)",
			r.MissedCheckins, r.CheckinInterval, MaxDuration)
	}
	return nil
}

// RuleKeys lists the rule keys in contract order.
func RuleKeys() []string {
	keys := make([]string, len(rules))
	for i, r := range rules {
		keys[i] = r.key
	}
	return keys
}

// Set sets the rule named key from its text form: a Go duration ("10m"), a
// count ("3"), "on"/"off" (or true/false), a merge mode or an overlap mode. The error names
// the key and says what it expected.
func (r *Rules) Set(key, value string) error {
	for _, rl := range rules {
		if rl.key != key {
			continue
		}
		value = strings.TrimSpace(value)
		switch p := rl.ptr(r).(type) {
		case *time.Duration:
			d, err := time.ParseDuration(value)
			if err != nil {
				return fmt.Errorf("%s: %q is not a duration like 10m or 1h30m", key, value)
			}
			next := *r
			*rl.ptr(&next).(*time.Duration) = d
			if err := rl.check(&next); err != nil {
				return err
			}
			*p = d
		case *int:
			n, err := strconv.Atoi(value)
			if err != nil {
				return fmt.Errorf("%s: %q is not a whole number", key, value)
			}
			next := *r
			*rl.ptr(&next).(*int) = n
			if err := rl.check(&next); err != nil {
				return err
			}
			*p = n
		case *bool:
			switch strings.ToLower(value) {
			case "on", "true", "yes", "1":
				*p = true
			case "off", "false", "no", "0":
				*p = false
			default:
				return fmt.Errorf("%s: %q is not on or off", key, value)
			}
		case *MergeMode:
			switch m := MergeMode(strings.ToLower(value)); m {
			case MergeAccept, MergeExternal:
				*p = m
			default:
				return fmt.Errorf("%s: %q is not accept or external", key, value)
			}
		case *OverlapMode:
			switch m := OverlapMode(strings.ToLower(value)); m {
			case OverlapWarn, OverlapWait:
				*p = m
			default:
				return fmt.Errorf("%s: %q is not warn or wait", key, value)
			}
		}
		return nil
	}
	return fmt.Errorf("%s: unknown rule (known: %s)", key, strings.Join(RuleKeys(), ", "))
}

// Get returns the rule named key in the text form Set reads.
func (r Rules) Get(key string) (string, bool) {
	for _, rl := range rules {
		if rl.key != key {
			continue
		}
		switch p := rl.ptr(&r).(type) {
		case *time.Duration:
			return p.String(), true
		case *int:
			return strconv.Itoa(*p), true
		case *bool:
			if *p {
				return "on", true
			}
			return "off", true
		case *MergeMode:
			return string(*p), true
		case *OverlapMode:
			return string(*p), true
		}
	}
	return "", false
}

package recovery

import "time"

// RoomClock is the room's time as foreman last read it: the latest
// timestamp on anything the room sent, and when that arrived by foreman's
// own (monotonic) clock. Deadlines are in room time, so that a stall or a
// slow room on foreman's side never fires one before the lines that arrived
// in time have been read; the alive mark a restart reads is in room time
// too. Every method takes foreman's clock reading, so that a simulation can
// hand it a virtual one.
type RoomClock struct {
	ts    time.Time // the room's latest timestamp
	local time.Time // foreman's clock when it arrived
}

// Saw notes a room timestamp that arrived at local.
func (c *RoomClock) Saw(ts, local time.Time) {
	if ts.IsZero() || !ts.After(c.ts) {
		return
	}
	c.ts, c.local = ts, local
}

// TS is the latest room timestamp seen; zero if none.
func (c *RoomClock) TS() time.Time { return c.ts }

// Now estimates the room's time at local: the latest reading, moved on by
// foreman's clock, in whole milliseconds as the room counts. Before any
// reading it is local.
func (c *RoomClock) Now(local time.Time) time.Time {
	if c.ts.IsZero() {
		return time.UnixMilli(local.UnixMilli()).UTC()
	}
	return time.UnixMilli(c.ts.Add(local.Sub(c.local)).UnixMilli()).UTC()
}

// LocalFor is when, by foreman's clock, the room's clock will read t.
func (c *RoomClock) LocalFor(t time.Time) time.Time {
	if c.ts.IsZero() {
		return t
	}
	return c.local.Add(t.Sub(c.ts))
}

package bot

import "time"

// roomClock is the room's time as foreman last read it: the latest
// timestamp on anything the room sent, and when that arrived by our clock.
// Deadlines are in room time, so that a stall or a slow room on our side
// never fires one before the lines that arrived in time have been read.
type roomClock struct {
	ts    time.Time // the room's latest timestamp
	local time.Time // our clock when it arrived
}

// saw notes a room timestamp that has just arrived.
func (c *roomClock) saw(ts time.Time) {
	if ts.IsZero() || !ts.After(c.ts) {
		return
	}
	c.ts, c.local = ts, time.Now()
}

// now estimates the room's time now: the latest reading, moved on by our
// clock. Before any reading it is our clock.
func (c *roomClock) now() time.Time {
	if c.ts.IsZero() {
		return time.UnixMilli(time.Now().UnixMilli()).UTC()
	}
	return time.UnixMilli(c.ts.Add(time.Since(c.local)).UnixMilli()).UTC()
}

// localFor is when, by our clock, the room's clock will read t.
func (c *roomClock) localFor(t, now time.Time) time.Time {
	if c.ts.IsZero() {
		return t
	}
	return c.local.Add(t.Sub(c.ts))
}

// now is the room's estimated time; see roomClock.
func (b *Bot) now() time.Time { return b.room.now() }

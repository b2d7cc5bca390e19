package bot

import (
	"time"

	"github.com/agentforeman/foreman/internal/recovery"
)

// roomClock is recovery.RoomClock read with this process's clock.
type roomClock struct{ c recovery.RoomClock }

// saw notes a room timestamp that has just arrived.
func (r *roomClock) saw(ts time.Time) { r.c.Saw(ts, time.Now()) }

// now estimates the room's time now.
func (r *roomClock) now() time.Time { return r.c.Now(time.Now()) }

// localFor is when, by our clock, the room's clock will read t.
func (r *roomClock) localFor(t time.Time) time.Time { return r.c.LocalFor(t) }

// now is the room's estimated time; see recovery.RoomClock.
func (b *Bot) now() time.Time { return b.room.now() }

// saw notes a room timestamp that has just arrived, and that the room was
// heard from now (the heartbeat asks its clock only when it is quiet).
func (b *Bot) saw(ts time.Time) {
	b.room.saw(ts)
	b.lastHeard = time.Now()
}

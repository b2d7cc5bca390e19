// Package coordinator is foreman's deterministic engine. Events go in (a room
// message heard at a time, the clock advancing) and reply lines come out. It
// has no goroutines, does no I/O and never reads the wall clock: time comes
// in with every event, so the same events always give the same replies, byte
// for byte. Replaying a transcript and recovering from a journal are both
// just feeding it events.
//
// Every rule of the contract (docs/protocol.md, sections 2 to 7)
// lives here, each in a file named for it.
package coordinator

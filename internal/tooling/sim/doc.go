// Package sim holds simulated participants of a foreman room: builders, an
// auditor, a CI bot and an operator. Each is a real AgentChat client with its
// own keyed identity, and reacts only to what it hears in the room, as an AI
// agent or a human would, so a demo or a test exercises the same path as a
// real build.
//
// Behaviour is scripted per participant (which components a builder prefers,
// on which it goes silent, blocks or aborts; which reviews an auditor fails)
// and paced in contract time: every delay is given in the protocol's minutes
// and stretched to real time by Config.Minute, so a whole build can run in
// seconds. Randomness (reaction jitter) comes from a seeded source, so a given
// seed tells the same story whenever the room's own latency stays small
// compared with a contract minute.
//
// The same participants also play on a Stage: a room on a virtual clock,
// with no network, no goroutines and no sleeping, where a given seed tells
// the same story every time, however loaded the machine.
package sim

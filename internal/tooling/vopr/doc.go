// Package vopr is foreman's deterministic fault simulator, after
// TigerBeetle's VOPR and FoundationDB's simulation: the whole of foreman's
// loop runs in one goroutine on a virtual clock, against a simulated room
// that behaves like the stock AgentChat server where it matters, under
// faults that a seed chooses, with its promises checked after every step.
//
// What runs is foreman's own code: the session that joins, starts, catches
// up after a restart and refuses what it cannot account for
// (internal/recovery), the node that numbers and confirms replies
// (internal/node), the engine (coordinator), the journal's record format
// (internal/journal) and the client's batching and stamps (agentchat's
// Outbox). What is modelled: the bot's event loop (handle an event, commit,
// then send; deadlines that ask the room for its clock; the alive mark),
// the client's connection (pacing, refusals, the echo that confirms a
// message, reconnects that look for an unconfirmed message in the replay),
// the journal's durability (a commit is synced when it returns, the alive
// mark is not, a snapshot is written in the background), the room, and the
// agents.
//
// The room (room.go) lists its members and replays its last N frames on a
// join, server notices included, and tells the others who joined; rewrites secret-looking text; refuses, never queues, a message
// sent within a second of the last; drops connections, loses its channel and
// history when restarted, and displaces a connection when the same key
// connects again.
//
// The faults (faults.go), each chosen by the seed: foreman killed at any
// step (what was written but not synced is lost), restarted after a random
// time; its journal damaged, cut or deleted; its connection dropped; the
// room restarted; a second foreman with the same key; a history shorter
// than the time away; foreman stalled; the room's clock jumping; agents
// that go silent and come back, repeat lines, flood, send malformed or
// hostile lines, or claim what they do not own; operators that pause,
// assign, release and reload.
//
// Beside the agents a host, the CI role, plays foreman host's part in work
// in progress (host.go, contract section 10) on a repository that only
// counts tips: it says OVERLAP for the pairs of components the seed made
// collide, and pins what a departed builder left for the next one.
//
// The invariants (check.go), after every step, each failure naming the seed
// and the step: no component has two owners; no reply is said twice unless
// marked "may repeat"; no builder that checked in within its deadline (not
// counting foreman's own time away) is timed out; every line the room heard
// is handled once or said to be missed in a gap notice; after each restart
// the engine equals an engine that never stopped, fed the same entries;
// every build ends COMPLETE, or with each unfinished component held with a
// reason a human can act on; a handoff pin always points at the last tip
// the departed builder pushed before it left; no OVERLAP for a merged
// component; an OVERLAP never changes an owner or a deadline, and with
// overlap warn no state either.
//
// Run one seed with Run, many with RunMany; `foreman sim` and `make sim`
// are the commands.
package vopr

// Package cluster keeps foreman's builds in NATS JetStream, so that a
// standby foreman can take a build over when its leader dies and a pool of
// processes can share many builds. Three things make it safe:
//
//   - The log: each build's entries are one stream (FOREMAN_LOG_<build>),
//     one message per commit, in the journal's record format; snapshots are
//     objects in FOREMAN_SNAPSHOTS, found through a pointer in FOREMAN_STATE.
//   - The lease: one key per build in the KV bucket FOREMAN_LEASES, created
//     by the first leader and renewed by compare-and-set on its revision. It
//     names the holder, its time to live and an epoch that grows at every
//     takeover. A standby counts the time to live from when it last saw the
//     key change, on its own clock, so no two clocks are ever compared. A
//     leader stops speaking a margin before its lease could lapse, counted
//     from when it sent its last successful renewal.
//   - The fence: every append names the stream sequence it expects to
//     follow, and a new leader's first act is a fence message. A deposed
//     leader's next append finds the stream moved on, fails, and the leader
//     stops at once; whatever it appended before the fence is part of the
//     log the new leader reads.
package cluster

// Package demo runs a whole foreman build in one process, with no setup: an
// embedded AgentChat server, foreman itself (the real bot, journal and all),
// and simulated builders, an auditor, a CI bot and an operator, every one a
// real client of the room. The clock is accelerated (one contract minute is
// 100ms by default) and the cast is scripted so that the build tells a
// story: a claim race, a builder that goes silent, failed audits, a RETRY, a
// dependency that makes another component wait, and a hard blocker a human
// settles, until COMPLETE. The room is printed as a chat log as it happens.
//
// Simulate plays the same cast and engine on a virtual clock instead (a
// sim.Stage): the same story, in milliseconds, every time, which is what the
// tests hold the story to; a live room's story can change with the load.
package demo

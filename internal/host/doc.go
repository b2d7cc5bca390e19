// Package host is the core of foreman host, the participant that turns a
// builder's READY into checks on a real git repository and, in merge mode
// external, lands approved work on the target branch.
//
// Core is a state machine with no I/O, no goroutines and no clock of its
// own, after the coordinator engine: it is fed what the room says (one line
// at a time, with the sender), the end of each git job it asked for, and
// clock ticks, and answers with Actions: lines to say, jobs to start or
// cancel, and records to make durable first. The shell (package live) does
// the I/O: the room, git (package gitrepo), the checks (package checks).
//
// The core knows the build only from the room. foreman's lines are facts
// about each component, in the order foreman decided them (ACK, FIX,
// TIMEOUT, RETRY, REVIEW, MERGED, OK RELEASE..., ESCALATE, TASKS, and
// STATUS answers); they alone end a run: a component that left CI has its
// run cancelled and never gets a verdict. Two moves foreman makes silently
// are inferred: a READY from the owner of a component being built (with CI
// gating on, it is now waiting for CI) and, in merge mode external, an
// AUDIT PASS, which the core confirms with STATUS c (approved=yes) before
// it lands anything. A wrong inference costs at most a verdict foreman
// refuses, never a landing.
package host

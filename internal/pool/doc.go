// Package pool runs foreman as one of several processes sharing builds in
// a cluster (internal/cluster): each process leads the builds whose leases
// it holds, up to its capacity and its fair share of the pool, and stands
// by for the rest. When a leader dies, its leases lapse and the others
// take its builds over; a takeover opens the build's log from JetStream
// and is, for the build, a restart (internal/recovery): the time without a
// leader is a pause.
package pool

package cluster

import (
	"fmt"
	"strings"
)

// The cluster's buckets. One set per NATS account: every foreman of a team
// shares them.
const (
	LeaseBucket    = "FOREMAN_LEASES"    // one lease per build
	StateBucket    = "FOREMAN_STATE"     // the builds' snapshot pointers
	NodeBucket     = "FOREMAN_NODES"     // the processes of the pool, for sharing builds out
	SnapshotBucket = "FOREMAN_SNAPSHOTS" // object store: the builds' snapshots
	streamPrefix   = "FOREMAN_LOG_"
)

// Key is a build's name as NATS can hold it in a stream's name, a subject
// and a KV key: letters, digits and - stay, every other byte is _ and two
// hex digits. Different names give different keys.
func Key(build string) string {
	var b strings.Builder
	for i := 0; i < len(build); i++ {
		c := build[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "_%02x", c)
		}
	}
	return b.String()
}

// StreamName is the stream that holds a build's log.
func StreamName(build string) string { return streamPrefix + Key(build) }

func logSubject(key string) string   { return "foreman." + key + ".log" }
func fenceSubject(key string) string { return "foreman." + key + ".fence" }
func snapKey(key string) string      { return "snap." + key }

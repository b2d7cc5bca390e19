// Package natsname is how foreman names things in NATS that its accounts'
// permissions name too (package natsauth): a name as a subject token, a
// set of labels, a process's inbox. A leaf: cluster, workq and natsauth
// all take these from here.
package natsname

import (
	"fmt"
	"slices"
	"strings"
)

// Key is a name as NATS can hold it in a stream's name, a subject token
// and a KV key: letters, digits and - stay, every other byte is _ and two
// hex digits. Different names give different keys.
func Key(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "_%02x", c)
		}
	}
	return b.String()
}

// Sandboxed is the label a job of a host that confines its checks asks
// for, and that every worker that confines its checks has.
const Sandboxed = "sandboxed"

// Any is the label set of a job that asks for no label.
const Any = "any"

// LabelSet is the name of a set of labels: sorted, joined by +, or Any.
func LabelSet(labels []string) string {
	if len(labels) == 0 {
		return Any
	}
	l := slices.Clone(labels)
	slices.Sort(l)
	return strings.Join(slices.Compact(l), "+")
}

// Inbox is where the answers to a process's requests come: its role's
// own, so that a NATS user may read its own answers and no one else's;
// a worker's its own alone (each worker is a user of its own).
func Inbox(role, id string) string {
	if role == "" {
		role = "foreman"
	}
	if role == "worker" {
		return "_INBOX_worker_" + Key(id)
	}
	return "_INBOX_" + role
}

package journal

import "github.com/agentforeman/foreman/internal/node"

// EncodeEntry is e as a journal record holds it (before the commit's
// framing and checksum), and DecodeEntry reads one back: for programs that
// model the journal in memory (the fault simulator) and must store entries
// exactly as it does, in the room's millisecond resolution, and for the
// cluster's log in JetStream, which keeps the same records.
func EncodeEntry(e node.Entry) ([]byte, error) { return encodeEntry(e) }

// DecodeEntry reads a record EncodeEntry wrote.
func DecodeEntry(data []byte) (node.Entry, error) { return decodeEntry(data) }

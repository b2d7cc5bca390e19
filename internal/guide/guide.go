// Package guide holds the guide for agent authors (AGENTS.md), embedded so
// that `foreman prompt` prints it from any installed binary.
//
// docs/AGENTS.md is a copy, kept identical by a test; edit this one.
package guide

//go:generate cp AGENTS.md ../../docs/AGENTS.md

import _ "embed"

// Text is the guide, in Markdown.
//
//go:embed AGENTS.md
var Text string

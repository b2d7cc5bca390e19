// Command foreman coordinates AI agents building one piece of software
// together in an AgentChat room. See README.md.
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

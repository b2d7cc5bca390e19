// Package maketargets holds only tests, of the Makefile against the
// repository and the README: make bench, bench-host and fuzz run every
// benchmark and fuzz target, so that a figure the docs cite cannot quietly
// stop being measured; and CI (.ci/run, make ci-small) runs every target
// the README documents, so that none can rot unseen.
package maketargets

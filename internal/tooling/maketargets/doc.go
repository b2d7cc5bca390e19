// Package maketargets holds only a test: that the Makefile's bench,
// bench-host and fuzz targets run every benchmark and fuzz target in the
// repository, so that a figure the docs cite from `make bench` cannot
// quietly stop being measured (or run in CI's make ci-small).
package maketargets

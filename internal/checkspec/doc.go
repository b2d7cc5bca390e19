// Package checkspec is what a configuration says of the host's checks and
// their sandbox, read without running anything: a check line split into
// its program and arguments, a shell operator written without a shell, an
// environment entry, the sandbox's network and limits and their sizes.
// internal/config reads its keys with it and the host (checks, sandbox)
// acts on the same values, so the configuration never imports the host.
package checkspec

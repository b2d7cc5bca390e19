// Package gitrepo runs the git command line on one repository for foreman
// host: resolving what a builder named, merging without a working tree
// (git merge-tree --write-tree), rebasing in a private worktree, making
// detached worktrees for checks, and moving a branch only from the commit
// it was checked against (git update-ref's compare-and-swap).
//
// Nothing here goes through a shell, and nothing a builder wrote is ever
// placed where git could read it as an option: names are checked first
// (CheckRef), passed in full (refs/heads/...) or as object ids, and after
// --end-of-options where git has it. Every command runs with repository
// hooks off and a fixed committer, so that a repository's own
// configuration cannot run code on the host.
//
// The git CLI rather than a Go library: it is what the repository's owners
// use (same object format, same locks, worktrees and configuration), and
// merge-tree --write-tree and worktrees have no equivalent in go-git.
package gitrepo

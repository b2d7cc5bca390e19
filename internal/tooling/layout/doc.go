// Package layout holds the test that keeps foreman's packages layered:
// it reads go list -json and names every import that points up (see
// layout_test.go for the rules, and docs/DESIGN.md).
package layout

package main

import (
	"fmt"
	"strings"

	"github.com/agentforeman/foreman/internal/config"
)

// noOperator is said when no one may decide: every escalation that holds
// a component waits for an operator's RESOLVE, RELEASE or ASSIGN, which
// then never comes.
const noOperator = "no operator configured (roles.operators is empty): nobody can RESOLVE, RELEASE or ASSIGN, " +
	"so a component held by an escalation (hard-blocker, audit-exhausted, need-info, ...) stays held for good; " +
	"foreman init writes a config with you as the operator, or list your agent id (foreman identity --identity YOUR_KEY) under roles.operators"

// buildWarnings are what is wrong with a config that still runs a build:
// validate prints them and run logs them before it joins the room.
func buildWarnings(c *config.Config) []string {
	var out []string
	if len(c.Roles.Operators) == 0 {
		out = append(out, noOperator)
	}
	if msg := openIdentityWarning(c.Server.Identity); msg != "" {
		out = append(out, msg)
	}
	return out
}

// poolWarnings are the warnings of a pool's builds, each said once with the
// build configs it concerns: a pool of a thousand builds without an
// operator gets one line, not a thousand.
func poolWarnings(builds []*config.Config, of func(*config.Config) []string) []string {
	var order []string
	files := map[string][]string{}
	for _, b := range builds {
		for _, w := range of(b) {
			if _, ok := files[w]; !ok {
				order = append(order, w)
			}
			files[w] = append(files[w], b.File)
		}
	}
	out := make([]string, len(order))
	for i, w := range order {
		out[i] = fileList(files[w], 2) + ": " + w
	}
	return out
}

// fileList names files, at most the first most of them and how many more.
func fileList(files []string, most int) string {
	if len(files) <= most+1 {
		return strings.Join(files, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(files[:most], ", "), len(files)-most)
}

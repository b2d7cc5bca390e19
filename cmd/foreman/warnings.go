package main

import (
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/config"
)

// noOperator is said when no one may decide: every escalation that holds
// a component waits for an operator's RESOLVE, RELEASE or ASSIGN, which
// then never comes.
const noOperator = "no operator configured (roles.operators is empty): nobody can RESOLVE, RELEASE or ASSIGN, " +
	"so a component held by an escalation (hard-blocker, audit-exhausted, need-info, ...) stays held for good; " +
	"foreman init writes a config with you as the operator, or list your agent id (foreman identity --identity YOUR_KEY) under roles.operators"

// overlapWithoutCI is said when rules.overlap asks builders to wait on
// OVERLAP lines that nobody may say.
const overlapWithoutCI = "rules.overlap is wait, but roles.ci is empty: only the CI role (foreman host) may say OVERLAP, " +
	"so no overlap is ever reported and nobody waits; list the host's agent id under roles.ci"

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
	if c.Rules.Overlap == coordinator.OverlapWait && len(c.Roles.CI) == 0 {
		out = append(out, overlapWithoutCI)
	}
	return out
}

package coordinator

import "github.com/agentforeman/foreman/protocol"

// roles answers "may this sender say that?" (contract section 2). Identity
// is always the sender id, never a display name.
type roles struct {
	operators, auditors, ci, merger map[string]bool
}

func newRoles(r Roles) roles {
	set := func(ids []string) map[string]bool {
		m := make(map[string]bool, len(ids))
		for _, id := range ids {
			m[id] = true
		}
		return m
	}
	return roles{set(r.Operators), set(r.Auditors), set(r.CI), set(r.Merger)}
}

// mayCommand: operators may give every operator command; the merger role
// may also say MERGED.
func (r roles) mayCommand(agent string, v protocol.Verb) bool {
	return r.operators[agent] || v == protocol.Merged && r.merger[agent]
}

// mayAudit: the configured auditors, or, where none is configured, anyone.
// Nobody audits their own work.
func (r roles) mayAudit(agent string, c *component) bool {
	return agent != c.owner && (len(r.auditors) == 0 || r.auditors[agent])
}

// mayReportCI mirrors mayAudit for the CI role.
func (r roles) mayReportCI(agent string, c *component) bool {
	return agent != c.owner && (len(r.ci) == 0 || r.ci[agent])
}

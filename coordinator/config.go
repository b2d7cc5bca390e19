package coordinator

// Component is one part of the build, as declared.
type Component struct {
	Name string   `json:"name"`
	Deps []string `json:"deps,omitempty"` // components it depends on, by name
}

// Roles list who may say what, by sender id (contract section 2).
type Roles struct {
	Operators []string
	Auditors  []string // empty: anyone but a component's own builder may audit it
	CI        []string // empty: anyone but a component's own builder may report CI
	Merger    []string
}

// Config is everything the engine needs to know before the build starts.
type Config struct {
	Build      string      // the build's name, for COMPLETE and build-level escalations
	Self       string      // the coordinator's own sender id: its lines are ignored
	Mentions   []string    // names the bot answers to at the start of a line
	Components []Component // in declaration order, which is TASKS order
	Roles      Roles
	Rules      Rules
	Budgets    Budgets // spend budgets (budget.go); none: nothing is enforced, all is counted
}

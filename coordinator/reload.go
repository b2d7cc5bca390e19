package coordinator

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// reload applies a reloaded list of components (the config or spec changed
// and the bot got SIGHUP). Components new to the build are appended;
// dependencies the old list declared and the new one does not are dropped,
// and new ones added. Edits made in the room (ADD, DEPEND, BLOCKED) stay. A
// running build cannot forget a component, so one missing from the new list
// stays and is reported. A new cycle halts the build; a reload that breaks
// the cycle resumes it (contract section 5). An invalid list changes
// nothing.
func (e *Engine) reload(at time.Time, comps []Component, rs *Roles) {
	e.fireDue(at)
	if err := e.checkReload(comps); err != nil {
		e.say(protocol.Error(protocol.BuildSubject, "reload refused, nothing changed: "+err.Error()))
		return
	}
	if rs != nil {
		e.cfg.Roles, e.roles = *rs, newRoles(*rs)
	}
	before := make(map[*component]bool)
	for _, c := range e.comps {
		before[c] = e.claimable(c)
	}
	for _, c := range comps {
		if _, ok := e.graph.Index(c.Name); !ok {
			e.addComponent(c.Name) // checked by checkReload
			e.complete = false
		}
	}
	wanted, listed := edges(comps), make(map[string]bool, len(comps))
	for _, c := range comps {
		listed[c.Name] = true
	}
	for _, old := range e.cfg.Components { // in order: what it says is deterministic
		if !listed[old.Name] {
			continue // it stays as it was, edges and all
		}
		for _, d := range old.Deps {
			if wanted[[2]string{old.Name, d}] {
				continue
			}
			c, dep := e.comps[e.index(old.Name)], e.comps[e.index(d)]
			e.removeEdge(c, dep)
			e.stopWaitingOn(c, dep)
		}
	}
	for _, c := range comps {
		ci := e.index(c.Name)
		for _, d := range c.Deps {
			if e.graph.AddEdge(ci, e.index(d)) && e.comps[e.index(d)].state != Merged {
				e.comps[ci].unmerged++
			}
		}
	}
	if missing := missingFrom(e.cfg.Components, comps); len(missing) > 0 {
		e.say(protocol.Error(protocol.BuildSubject, fmt.Sprintf(
			"reload: %s left the config but stay in the build; MERGED or RELEASE them as fit", strings.Join(missing, ", "))))
	}
	e.cfg.Components = comps
	if e.halted != nil {
		e.recheckCycle()
	} else if cycle := e.graph.Cycle(); cycle != nil {
		e.halt(cycle)
	}
	for _, c := range e.comps {
		if e.claimable(c) && !before[c] {
			e.announceTasks()
			break
		}
	}
	e.flushTasks()
}

// checkReload refuses a list with bad or repeated names or unknown
// dependencies.
func (e *Engine) checkReload(comps []Component) error {
	names := make(map[string]bool, len(comps))
	for _, c := range comps {
		if !protocol.ValidComponent(c.Name) {
			return fmt.Errorf("%q is not a component name", c.Name)
		}
		if names[c.Name] {
			return fmt.Errorf("%s is declared twice", c.Name)
		}
		names[c.Name] = true
	}
	for _, c := range comps {
		for _, d := range c.Deps {
			if _, ok := e.graph.Index(d); !ok && !names[d] {
				return fmt.Errorf("%s depends on %s, which is not a component", c.Name, d)
			}
		}
	}
	return nil
}

func (e *Engine) index(name string) int {
	i, _ := e.graph.Index(name)
	return i
}

// edges lists the declared dependency edges of comps, by name.
func edges(comps []Component) map[[2]string]bool {
	out := make(map[[2]string]bool)
	for _, c := range comps {
		for _, d := range c.Deps {
			out[[2]string{c.Name, d}] = true
		}
	}
	return out
}

func missingFrom(old, now []Component) []string {
	keep := make(map[string]bool, len(now))
	for _, c := range now {
		keep[c.Name] = true
	}
	var out []string
	for _, c := range old {
		if !keep[c.Name] {
			out = append(out, c.Name)
		}
	}
	return out
}

package transcript

import (
	"strings"
)

// Update rewrites the transcript's coordinator lines from what the engine
// said (the datadriven habit: run, look at the diff, accept it). Heard lines,
// directives, comments and blank lines stay where they were; each said line
// goes right after the heard line that caused it, or before the heard line
// its timer fired ahead of. Said lines whose verb is ignored are kept only
// where the transcript listed them.
func (r *Result) Update() []byte {
	t := r.T
	keep := make([]bool, len(r.Said))
	k := 0
	for _, c := range r.Diff {
		if c.Kind == Missing {
			continue
		}
		for k < len(r.Said) && r.Said[k] != c.Got {
			k++
		}
		if k < len(r.Said) {
			keep[k] = true
			k++
		}
	}
	var b strings.Builder
	s := 0
	// emit writes the said lines up to the heard line at index upTo: those
	// that came before it, and, with answers, its own answers too.
	emit := func(upTo int, answers bool) {
		for ; s < len(r.Said); s++ {
			said := r.Said[s]
			if said.After > upTo || said.After == upTo && (said.Timer || !answers) {
				return
			}
			if keep[s] {
				b.WriteString(FormatTime(said.At) + " " + t.Coordinator + " " + said.Text + "\n")
			}
		}
	}
	next := 0 // index into t.Lines
	for n, raw := range t.Raw {
		if next < len(t.Lines) && t.Lines[next].Pos == n+1 {
			i := next
			next++
			if t.Lines[i].Said {
				continue // replaced by what the engine said
			}
			emit(i, false)
			b.WriteString(raw + "\n")
			emit(i, true)
			continue
		}
		b.WriteString(raw + "\n")
	}
	emit(len(t.Lines), true)
	return []byte(b.String())
}

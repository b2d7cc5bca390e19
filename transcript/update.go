package transcript

import (
	"strings"
)

// inputs are the file lines (Pos) of what the replay feeds the engine, in
// order: heard lines and foreman's timed directives.
func (t *Transcript) inputs() []int {
	var out []int
	k := 0
	for _, l := range t.Lines {
		for ; k < len(t.Timed) && t.Timed[k].Pos < l.Pos; k++ {
			out = append(out, t.Timed[k].Pos)
		}
		if !l.Said {
			out = append(out, l.Pos)
		}
	}
	for ; k < len(t.Timed); k++ {
		out = append(out, t.Timed[k].Pos)
	}
	return out
}

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
	inputs := t.inputs()
	next, said := 0, 0 // into inputs, and into t.Lines for the coordinator's lines
	for n, raw := range t.Raw {
		pos := n + 1
		for said < len(t.Lines) && t.Lines[said].Pos < pos {
			said++
		}
		if said < len(t.Lines) && t.Lines[said].Pos == pos && t.Lines[said].Said {
			continue // replaced by what the engine said
		}
		if next < len(inputs) && inputs[next] == pos {
			next++
			emit(pos, false)
			b.WriteString(raw + "\n")
			emit(pos, true)
			continue
		}
		b.WriteString(raw + "\n")
	}
	emit(len(t.Raw)+1, true)
	return []byte(b.String())
}

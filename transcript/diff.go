package transcript

import (
	"fmt"
	"io"
	"strings"
)

// ChangeKind says how an expected and an actual line line up.
type ChangeKind uint8

// Kinds of change.
const (
	Same    ChangeKind = iota // expected and said
	Missing                   // expected, never said
	Extra                     // said, not expected (and its verb not ignored)
)

// Change is one row of the aligned comparison.
type Change struct {
	Kind ChangeKind
	Want Line // Same, Missing
	Got  Said // Same, Extra
}

// maxCells bounds the alignment table; past it the comparison is greedy,
// which finds the same answer whenever the replay passes.
const maxCells = 4 << 20

// align lines up expected and actual lines with a longest common
// subsequence, so a failure shows as a few changes rather than everything
// after the first difference. Said lines whose verb is ignored drop out when
// nothing expects them.
func align(want []Line, got []Said, ignore map[string]bool) []Change {
	// A passing replay aligns line by line; only a failure is worth the
	// table that finds the smallest set of changes.
	quick := greedy(want, got, ignore)
	n, m := len(want), len(got)
	if passed(quick) || n*m > maxCells {
		return quick
	}
	// lcs[i][j]: longest alignment of want[i:] and got[j:].
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if matches(want[i], got[j]) {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []Change
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && matches(want[i], got[j]) && lcs[i][j] == lcs[i+1][j+1]+1:
			out = append(out, Change{Kind: Same, Want: want[i], Got: got[j]})
			i, j = i+1, j+1
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			if !ignore[verb(got[j].Text)] {
				out = append(out, Change{Kind: Extra, Got: got[j]})
			}
			j++
		default:
			out = append(out, Change{Kind: Missing, Want: want[i]})
			i++
		}
	}
	return out
}

func passed(changes []Change) bool {
	for _, c := range changes {
		if c.Kind != Same {
			return false
		}
	}
	return true
}

func greedy(want []Line, got []Said, ignore map[string]bool) []Change {
	var out []Change
	i := 0
	for _, g := range got {
		switch {
		case i < len(want) && matches(want[i], g):
			out = append(out, Change{Kind: Same, Want: want[i], Got: g})
			i++
		case !ignore[verb(g.Text)]:
			out = append(out, Change{Kind: Extra, Got: g})
		}
	}
	for ; i < len(want); i++ {
		out = append(out, Change{Kind: Missing, Want: want[i]})
	}
	return out
}

// context is how many matching lines are shown around each change.
const context = 2

// WriteDiff writes the failures of r as a diff: "-" for a line the
// transcript expects that was never said, "+" for a line said that it does
// not expect, with unchanged lines around them for context.
func (r *Result) WriteDiff(w io.Writer) {
	show := make([]bool, len(r.Diff))
	for i, c := range r.Diff {
		if c.Kind == Same {
			continue
		}
		for k := max(0, i-context); k <= min(len(r.Diff)-1, i+context); k++ {
			show[k] = true
		}
	}
	gap := false
	for i, c := range r.Diff {
		if !show[i] {
			gap = true
			continue
		}
		if gap {
			fmt.Fprintln(w, "    ...")
			gap = false
		}
		switch c.Kind {
		case Same:
			fmt.Fprintf(w, "    %s %s\n", FormatTime(c.Got.At), c.Got.Text)
		case Missing:
			fmt.Fprintf(w, "  - %s %s    (expected at %s:%d, never said)\n", FormatTime(c.Want.At), c.Want.Text, r.T.Name, c.Want.Pos)
		case Extra:
			fmt.Fprintf(w, "  + %s %s    (said, not expected)\n", FormatTime(c.Got.At), c.Got.Text)
		}
	}
}

// WriteTimeline writes every line of the replay in order, heard and said,
// marking said lines that failed.
func (r *Result) WriteTimeline(w io.Writer) {
	status := map[int]string{} // index in Said -> mark
	k := 0
	for _, c := range r.Diff {
		for k < len(r.Said) && (c.Kind == Missing || r.Said[k] != c.Got) {
			k++ // ignored lines dropped out of the diff
		}
		if c.Kind == Extra && k < len(r.Said) {
			status[k] = "+"
		}
		if c.Kind != Missing {
			k++
		}
	}
	s := 0
	emit := func(upTo int) {
		for ; s < len(r.Said) && r.Said[s].After < upTo; s++ {
			mark := status[s]
			if mark == "" {
				mark = " "
			}
			fmt.Fprintf(w, "%s %s %s %s\n", mark, FormatTime(r.Said[s].At), r.T.Coordinator, r.Said[s].Text)
		}
	}
	for _, pos := range r.T.inputs() {
		emit(pos)
		fmt.Fprintf(w, "  %s\n", strings.TrimSpace(r.T.Raw[pos-1]))
	}
	emit(len(r.T.Raw) + 2)
}

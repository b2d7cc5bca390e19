package suggest

import "strings"

// MaxScan bounds how many names one suggestion compares with, so that an
// unknown name costs the same in a build of 100,000 components as in one
// of 4,000 (a flood of unknown CLAIMs once cost 8 ms each at 100,000).
const MaxScan = 4096

// Index holds the names to suggest from, by length: a typo within
// maxDistance edits is within maxDistance of the length it meant.
type Index struct {
	all   []string         // in the order added
	byLen map[int][]string // in the order added
	fold  map[string]string
}

// NewIndex returns an empty index.
func NewIndex() *Index { return &Index{byLen: map[int][]string{}, fold: map[string]string{}} }

// Add adds a name.
func (x *Index) Add(name string) {
	x.all = append(x.all, name)
	x.byLen[len(name)] = append(x.byLen[len(name)], name)
	if _, ok := x.fold[strings.ToLower(name)]; !ok {
		x.fold[strings.ToLower(name)] = name
	}
}

// Closest is the package's Closest over the names added. With more than
// MaxScan names it compares word with at most MaxScan of those whose length
// is near its own, nearest lengths first: deterministic, bounded, and it
// may miss a suggestion in a huge build (the reply then points at STATUS).
func (x *Index) Closest(word string) string {
	if len(x.all) <= MaxScan {
		return Closest(word, x.all)
	}
	if c, ok := x.fold[strings.ToLower(word)]; ok && c != word {
		return c
	}
	best, bestDist, scanned := "", maxDistance+1, 0
	for _, off := range []int{0, -1, 1, -2, 2} {
		for _, c := range x.byLen[len(word)+off] {
			if scanned == MaxScan {
				return best
			}
			scanned++
			if c == word {
				continue
			}
			if d := distance(word, c, bestDist-1); d < bestDist {
				best, bestDist = c, d
			}
		}
	}
	return best
}

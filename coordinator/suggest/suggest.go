// Package suggest finds the name someone probably meant.
package suggest

import "strings"

// maxDistance is how many edits a typo may be: "apj" for "api", "dbb" for
// "db". More than that suggests unrelated names.
const maxDistance = 2

// Closest returns the candidate nearest to word, or "" if none is within a
// couple of edits. A candidate equal but for case wins outright; among equally
// near ones the first listed wins, so the answer is deterministic.
func Closest(word string, candidates []string) string {
	best, bestDist := "", maxDistance+1
	for _, c := range candidates {
		if c == word {
			continue
		}
		if strings.EqualFold(c, word) {
			return c
		}
		if d := distance(word, c, bestDist-1); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b, or limit+1 when it is
// more than limit. Only a band of width 2*limit+1 is computed, so a long list
// of candidates costs little more than reading it.
func distance(a, b string, limit int) int {
	if limit < 0 {
		return limit + 1
	}
	if d := len(a) - len(b); d > limit || -d > limit {
		return limit + 1
	}
	// Names are at most 64 bytes: rows on the stack, no allocation.
	var rows [2][66]int
	prev, cur := rows[0][:], rows[1][:]
	if len(b)+1 > len(prev) {
		prev, cur = make([]int, len(b)+1), make([]int, len(b)+1)
	}
	prev, cur = prev[:len(b)+1], cur[:len(b)+1]
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			if j < i-limit || j > i+limit {
				cur[j] = limit + 1
				continue
			}
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			return limit + 1
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit+1)
}

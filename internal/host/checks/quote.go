package checks

import "strings"

// Quote writes a command as a shell would read it back: words that hold
// nothing a shell treats specially as they are, others in single quotes
// (sh -c 'test -f README'), so that the log shows what ran.
func Quote(argv []string) string {
	words := make([]string, len(argv))
	for i, w := range argv {
		words[i] = quoteWord(w)
	}
	return strings.Join(words, " ")
}

func quoteWord(w string) string {
	if w == "" {
		return "''"
	}
	plain := true
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%^", r)) {
			plain = false
			break
		}
	}
	if plain {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

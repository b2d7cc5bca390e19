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

// shellOperators are what a shell reads between commands or as a
// redirection; a check written with one and no shell would hand it to its
// program as an argument.
var shellOperators = []string{"&&", "||", "$(", "`", "|", ";", ">", "<"}

// ShellOperator returns the first shell operator written outside quotes
// in a check as configured, "" if none: `test -f README && echo ok` has no
// shell to read its &&, and needs sh -c '...'.
func ShellOperator(s string) string {
	var quote rune
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		default:
			for _, op := range shellOperators {
				if strings.HasPrefix(s[i:], op) {
					return op
				}
			}
		}
	}
	return ""
}

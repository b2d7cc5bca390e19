package checkspec

import (
	"fmt"
	"regexp"
	"strings"
)

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckEnvEntry checks one host.env entry: NAME or NAME=value.
func CheckEnvEntry(s string) error {
	name, _, _ := strings.Cut(s, "=")
	if !envNameRE.MatchString(name) {
		return fmt.Errorf("%q is not NAME or NAME=value", s)
	}
	return nil
}

// Split reads one check as written in the configuration into a program
// and its arguments: words are split on spaces, and single or double
// quotes group words, as a shell would, but nothing else a shell does
// happens (no variables, globs, pipes or redirections). Write sh -c '...'
// to have a shell.
func Split(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		case r < 0x20:
			return nil, fmt.Errorf("%q holds a control character", s)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("%q has an unclosed %c quote", s, quote)
	}
	if inWord {
		out = append(out, cur.String())
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%q is empty", s)
	}
	return out, nil
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

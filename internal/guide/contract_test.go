package guide

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/protocol"
)

// contract reads the reply forms of the contract's section 3, by verb, and
// the escalation codes of its section 6, from the repository's copy.
func contract(t *testing.T) (map[string][]string, map[string]bool) {
	t.Helper()
	b, err := os.ReadFile(contractFile)
	require.NoError(t, err)
	doc := string(b)
	replies := section(doc, "## 3.")
	forms := map[string][]string{}
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")
	for _, m := range row.FindAllStringSubmatch(replies, -1) {
		f := strings.Fields(m[1])
		forms[f[0]] = f[1:]
	}
	require.Len(t, forms, 15, "section 3 lists fifteen replies")
	codes := map[string]bool{}
	first, _, _ := strings.Cut(strings.TrimSpace(section(doc, "## 6.")), "\n\n") // the list, not the advice after it
	for _, m := range regexp.MustCompile("`([a-z-]+)`").FindAllStringSubmatch(first, -1) {
		codes[m[1]] = true
	}
	require.Len(t, codes, 11, "section 6 lists eleven codes")
	return forms, codes
}

func section(doc, heading string) string {
	_, rest, ok := strings.Cut(doc, "\n"+heading)
	if !ok {
		return ""
	}
	_, body, _ := strings.Cut(rest, "\n") // past the heading
	body, _, _ = strings.Cut(body, "\n## ")
	return body
}

var (
	word   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]*$`)
	counts = regexp.MustCompile(`^\d+/\d+$`)
)

// checkReply reports whether line is a reply of the form the contract
// gives its verb: every <arg> present and of its kind, and nothing after
// the last unless the form takes free text.
func checkReply(line string, forms map[string][]string, codes map[string]bool) error {
	words := strings.Fields(line)
	if len(words) == 0 {
		return fmt.Errorf("empty")
	}
	form, ok := forms[words[0]]
	if !ok {
		return fmt.Errorf("%s is not a reply of the contract", words[0])
	}
	args := words[1:]
	for i, tok := range form {
		last := i == len(form)-1
		switch {
		case strings.HasPrefix(tok, "["):
			return nil // optional text or fields to the end
		case strings.HasSuffix(tok, "..."):
			if len(args) == 0 {
				return fmt.Errorf("%s wants at least one %s", words[0], tok)
			}
			return nil
		case len(args) == 0:
			return fmt.Errorf("%s: missing %s", words[0], tok)
		}
		a := args[0]
		switch tok {
		case "<text>", "<reason>":
			return nil // free text to the end, at least a word
		case "<command>":
			cmd, err := protocol.Read(strings.Join(args, " "))
			if err != nil || cmd.Verb == protocol.NoVerb {
				return fmt.Errorf("OK: %q is not a command", strings.Join(args, " "))
			}
			return nil
		case "<@a>":
			if !protocol.ValidAgent(a) {
				return fmt.Errorf("%s: %q is not a sender id", words[0], a)
			}
		case "<code>":
			if !codes[a] {
				return fmt.Errorf("ESCALATE: %q is not an escalation code", a)
			}
		case "<n>/<max>":
			if !counts.MatchString(a) {
				return fmt.Errorf("%s: %q is not n/max", words[0], a)
			}
		default:
			if !word.MatchString(a) && !protocol.ValidAgent(a) && !strings.HasPrefix(tok, "<pr") {
				return fmt.Errorf("%s: %q is not a name for %s", words[0], a, tok)
			}
		}
		args = args[1:]
		if last && len(args) > 0 {
			return fmt.Errorf("%s: unexpected %q after %s", words[0], strings.Join(args, " "), tok)
		}
	}
	return nil
}

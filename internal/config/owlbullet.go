package config

import (
	"regexp"
	"strings"
	"unicode"
)

// readBullet reads one dependency bullet of component self. Owl specs are
// prose written for people, so the rule is one a person can predict, in
// this order (docs/OWL.md says it for the spec's author):
//
//  1. "(note)" anywhere keeps the bullet a note.
//  2. A bullet that starts with a name in backticks, or with "component:",
//     is literal: that one name, exactly, and the rest is not read.
//  3. A bullet whose first word is "none" or "nothing" is no dependency.
//  4. Otherwise every component named in it, as a whole word in any case
//     ("Identity verification"), or as whole segments of a word joined by
//     - / @ ("agent-runner", "@scope/client"), is a dependency; the longest
//     name wins ("mcp-server" is not also "server"). "." and "_" join a
//     word rather than split it: "receipts.jsonl" and "FILE_CHUNK" name no
//     component. A bullet that names no component but self is a note.
func readBullet(text, self string, names *componentNames) Bullet {
	b := Bullet{Text: text}
	plain := plainText(text)
	if strings.Contains(strings.ToLower(plain), "(note)") {
		b.Reading, b.Why = Note, "marked (note)"
		return b
	}
	if word, ok := literalName(text); ok {
		if word == self {
			b.Reading, b.Why = Note, "names the component itself"
			return b
		}
		if names.exact[word] {
			b.Reading, b.Deps = Literal, []Dep{{Name: word, Words: word}}
			return b
		}
		b.Reading, b.Why, b.Unknown = Note, "taken literally, names no component", word
		return b
	}
	if w := strings.ToLower(firstWord(plain)); w == "none" || w == "nothing" {
		b.Reading = None
		return b
	}
	selfNamed := false
	for _, m := range namesIn(plain, names) {
		switch {
		case m.Name == self:
			selfNamed = true
		case !hasDep(b.Deps, m.Name):
			b.Deps = append(b.Deps, m)
		}
	}
	switch {
	case len(b.Deps) > 0:
		b.Reading = Prose
	case selfNamed:
		b.Reading, b.Why = Note, "names no component but "+self+" itself"
	default:
		b.Reading, b.Why = Note, "names no component"
	}
	return b
}

func hasDep(deps []Dep, name string) bool {
	for _, d := range deps {
		if d.Name == name {
			return true
		}
	}
	return false
}

var (
	codeStart   = regexp.MustCompile("^`([^`]*)`")
	literalWord = regexp.MustCompile(`(?i)^component\s*:\s*(\S+)`)
)

// literalName is the name of a literal bullet: "`runner` ..." or
// "component: runner ...".
func literalName(text string) (string, bool) {
	t := strings.TrimSpace(strings.NewReplacer("**", "", "__", "").Replace(text))
	var name string
	if m := codeStart.FindStringSubmatch(t); m != nil {
		name = strings.TrimSpace(m[1])
	} else if m := literalWord.FindStringSubmatch(t); m != nil {
		name = strings.Trim(m[1], "`*_,.;:()")
	}
	return name, name != ""
}

// plainText is a bullet without its markdown: links give their text (a
// link's target is not read), and code and emphasis marks go.
func plainText(s string) string {
	s = linkText.ReplaceAllString(s, "$1")
	return strings.NewReplacer("`", "", "**", "", "__", "").Replace(s)
}

var (
	// clauseBreak ends the stretch of words shown around a name.
	clauseBreak = regexp.MustCompile(`[(){}\[\],;]|:(\s|$)|\s[-–—]+\s`)
	// token is a word as names are looked for in it, with the characters
	// a name may hold; - / @ split it into segments.
	token = regexp.MustCompile(`[\p{L}\p{N}._/@-]+`)
)

// namesIn finds the components named in a bullet's plain text, in order,
// each with the words around it (its clause: up to a word either side).
func namesIn(text string, names *componentNames) []Dep {
	var out []Dep
	for _, clause := range clauseBreak.Split(text, -1) {
		fields := strings.Fields(clause)
		for fi, f := range fields {
			for _, tok := range token.FindAllString(f, -1) {
				for _, n := range segmentsNaming(tok, names) {
					out = append(out, Dep{Name: n, Words: around(fields, fi)})
				}
			}
		}
	}
	return out
}

// segmentsNaming finds the names a token holds as whole runs of its
// segments, longest first from each segment on.
func segmentsNaming(tok string, names *componentNames) []string {
	tok = strings.TrimFunc(tok, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	// segs[i] is segment i's start and end in tok.
	var segs [][2]int
	start := 0
	for i, r := range tok {
		if r == '-' || r == '/' || r == '@' {
			segs = append(segs, [2]int{start, i})
			start = i + 1
		}
	}
	segs = append(segs, [2]int{start, len(tok)})
	var out []string
	for i := 0; i < len(segs); i++ {
		for j := len(segs) - 1; j >= i; j-- {
			if n := names.lookup(tok[segs[i][0]:segs[j][1]]); n != "" {
				out = append(out, n)
				i = j
				break
			}
		}
	}
	return out
}

// around is field i with the word either side of it that is not a little
// word ("the", "for"), its outer punctuation trimmed: the words shown for
// why a name was read ("job-queue leases", "from identity module" shows as
// "identity module"). Only what is shown depends on it, not the reading.
func around(fields []string, i int) string {
	words := []string{fields[i]}
	if i > 0 && !littleWords[strings.ToLower(fields[i-1])] {
		words = append([]string{fields[i-1]}, words...)
	}
	if i+1 < len(fields) && !littleWords[strings.ToLower(fields[i+1])] {
		words = append(words, fields[i+1])
	}
	return strings.Trim(strings.Join(words, " "), `"'*_.!?`)
}

var littleWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields("a an the this that its their our your of for to in on at by with from via into and or but as is are be each every all any no not") {
		littleWords[w] = true
	}
}

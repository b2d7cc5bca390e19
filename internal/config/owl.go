package config

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/protocol"
)

// ReadOwlSpec reads the components of an owl spec directory. Owl specs come
// in two layouts, and both are read: one file per component
// (DIR/components/NAME.md, as the owl reference coordinator writes them)
// and one DIR/components.md with a "## name" section per component (as
// AgentChat's own spec is written). The first word of a heading names the
// component ("## disputes (agentcourt)" is disputes).
//
// Dependencies are the bullets under a component's "depends on:" line. Owl
// specs are prose, so a bullet is a dependency when its first word names
// another component of the spec ("- identity verification (tier 3)"), and a
// note otherwise ("- a websocket server", "- nothing (pure functions)"): the
// notes are returned, for validate to show what was not taken.
//
// Declaration order is the order product.md names the components in, by
// link or by a bullet's first word, then any others by name.
func ReadOwlSpec(dir string) ([]coordinator.Component, []string, error) {
	secs, err := readSections(dir)
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, 0, len(secs))
	for n := range secs {
		names = append(names, n)
	}
	sort.Strings(names)
	if product, err := os.ReadFile(filepath.Join(dir, "product.md")); err == nil {
		names = productOrder(string(product), names)
	}
	var comps []coordinator.Component
	var notes []string
	for _, name := range names {
		s := secs[name]
		c := coordinator.Component{Name: name}
		for _, b := range dependsOn(s.body) {
			dep := lookup(firstWord(b.text), names)
			switch {
			case dep == "" || dep == name:
				notes = append(notes, fmt.Sprintf("%s:%d: %s depends on %q: taken as a note, not a dependency (its first word names no other component)",
					s.file, s.first+b.line, name, b.text))
			case !contains(c.Deps, dep):
				c.Deps = append(c.Deps, dep)
			}
		}
		comps = append(comps, c)
	}
	if err := CheckComponents(comps); err != nil {
		return nil, nil, err
	}
	return comps, notes, nil
}

// section is one component's text and where it was read, for errors and
// notes: at names the file or heading, first is the file's line the body
// starts on.
type section struct {
	at, file string
	first    int
	body     string
}

func readSections(dir string) (map[string]section, error) {
	secs := map[string]section{}
	add := func(name string, s section) error {
		if !protocol.ValidComponent(name) {
			return fmt.Errorf("%s: %q is not a component name: up to %d letters, digits, . _ / -, starting with a letter or digit", s.at, name, protocol.MaxComponent)
		}
		if prev, dup := secs[name]; dup {
			return fmt.Errorf("%s: component %q is also in %s", s.at, name, prev.at)
		}
		secs[name] = s
		return nil
	}
	files, err := filepath.Glob(filepath.Join(dir, "components", "*.md"))
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		name := strings.TrimSuffix(filepath.Base(f), ".md")
		if err := add(name, section{at: "components/" + filepath.Base(f), file: "components/" + filepath.Base(f), first: 1, body: string(b)}); err != nil {
			return nil, err
		}
	}
	single, err := os.ReadFile(filepath.Join(dir, "components.md"))
	switch {
	case err == nil:
		for _, s := range splitSections(string(single)) {
			if err := add(s.name, s.section); err != nil {
				return nil, err
			}
		}
	case !os.IsNotExist(err):
		return nil, err
	}
	if len(secs) == 0 {
		return nil, fmt.Errorf("%s has no components: neither components/NAME.md files nor a components.md with a \"## name\" section each", dir)
	}
	return secs, nil
}

type namedSection struct {
	name string
	section
}

var heading = regexp.MustCompile(`^(#+)\s+(.*)$`)

// splitSections cuts components.md at its level-2 headings; a level-1
// heading ends a section without starting one.
func splitSections(text string) []namedSection {
	var out []namedSection
	var cur *namedSection
	var body strings.Builder
	flush := func() {
		if cur != nil {
			cur.body = body.String()
			out = append(out, *cur)
		}
		cur = nil
		body.Reset()
	}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if m := heading.FindStringSubmatch(line); m != nil && len(m[1]) <= 2 {
			flush()
			if len(m[1]) == 2 {
				name := firstWord(m[2])
				cur = &namedSection{name: name, section: section{at: fmt.Sprintf("components.md:%d", i+1), file: "components.md", first: i + 2}}
			}
			continue
		}
		if cur != nil {
			body.WriteString(line)
			body.WriteByte('\n')
		}
	}
	flush()
	return out
}

// productOrder puts the components in the order product.md first names
// them: a link to components/NAME.md or components.md#NAME, or a bullet
// whose first word is a component.
func productOrder(product string, sorted []string) []string {
	left := make(map[string]bool, len(sorted))
	for _, n := range sorted {
		left[n] = true
	}
	var order []string
	take := func(word string) {
		if n := lookup(word, sorted); n != "" && left[n] {
			order = append(order, n)
			delete(left, n)
		}
	}
	for _, line := range strings.Split(product, "\n") {
		if m := bulletLine.FindStringSubmatch(line); m != nil {
			take(firstWord(m[1]))
		}
		for _, m := range productLink.FindAllStringSubmatch(line, -1) {
			take(m[1] + m[2])
		}
	}
	for _, n := range sorted {
		if left[n] {
			order = append(order, n)
		}
	}
	return order
}

var (
	productLink   = regexp.MustCompile(`\(components/([^)/#]+)\.md\)|\(components\.md#([^)\s]+)\)`)
	dependsOnLine = regexp.MustCompile(`(?i)^[#*_\s]*depends on[*_\s]*:?[*_\s]*$`)
	bulletLine    = regexp.MustCompile(`^\s*(?:[-*+]|\d+\.)\s+(.*)$`)
	linkText      = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// bullet is a dependency bullet as written, and its line in the body
// (from 0).
type bullet struct {
	text string
	line int
}

// dependsOn returns the bullets under every "depends on:" line.
func dependsOn(body string) []bullet {
	var out []bullet
	in := false
	for i, line := range strings.Split(body, "\n") {
		line = strings.TrimRight(line, "\r")
		if dependsOnLine.MatchString(line) {
			in = true
			continue
		}
		if !in {
			continue
		}
		m := bulletLine.FindStringSubmatch(line)
		if m == nil {
			if strings.TrimSpace(line) != "" {
				in = false
			}
			continue
		}
		if b := strings.TrimSpace(m[1]); b != "" {
			out = append(out, bullet{b, i})
		}
	}
	return out
}

// firstWord is the first word of a bullet or heading with its markdown
// (links, emphasis, code) and trailing punctuation taken off: "[db](x) -
// schema" and "**db**: schema" both give db.
func firstWord(s string) string {
	s = linkText.ReplaceAllString(s, "$1")
	s = strings.NewReplacer("`", "", "**", "", "__", "").Replace(s)
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return ""
	}
	w := fields[0]
	if i := strings.IndexAny(w, "(:,;"); i >= 0 {
		w = w[:i]
	}
	return strings.TrimRight(w, ".!?")
}

// lookup finds the component a word names: exactly, or else in another
// case when that is unambiguous (prose capitalises the first word).
func lookup(word string, names []string) string {
	if word == "" {
		return ""
	}
	found := ""
	for _, n := range names {
		if n == word {
			return n
		}
		if strings.EqualFold(n, word) {
			if found != "" {
				return ""
			}
			found = n
		}
	}
	return found
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

package config

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/coordinator/suggest"
	"github.com/agentforeman/foreman/protocol"
)

// ReadOwlSpec reads the components of an owl spec directory. Owl specs come
// in two layouts, and both are read: one file per component
// (DIR/components/NAME.md, as the owl reference coordinator writes them)
// and one DIR/components.md with a "## name" section per component (as
// AgentChat's own spec is written). The first word of a heading names the
// component ("## disputes (agentcourt)" is disputes).
//
// Dependencies are the bullets under a component's "depends on:" line,
// read as prose by the rule of readBullet (owlbullet.go); when what prose
// says would close a cycle, those bullets are left out (cutProseCycles) so
// that the build can start, and a warning says which they were.
//
// Declaration order is the order product.md names the components in, by
// link or by a bullet's first word, then any others by name.
func ReadOwlSpec(dir string) (*OwlSpec, error) {
	secs, err := readSections(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(secs))
	for n := range secs {
		names = append(names, n)
	}
	sort.Strings(names)
	if product, err := os.ReadFile(filepath.Join(dir, "product.md")); err == nil {
		names = productOrder(string(product), names)
	}
	spec := &OwlSpec{}
	known := newComponentNames(names)
	for _, name := range names {
		s := secs[name]
		for _, b := range dependsOn(s.body) {
			r := readBullet(b.text, name, known)
			r.At = fmt.Sprintf("%s:%d", s.file, s.first+b.line)
			r.Component = name
			if r.Reading == Note && r.Unknown != "" {
				spec.Warnings = append(spec.Warnings, fmt.Sprintf("%s: %s depends on %q, taken literally, but no component is named %s%s: left out",
					r.At, name, r.Text, r.Unknown, didYouMean(r.Unknown, names, name)))
			}
			spec.Bullets = append(spec.Bullets, r)
		}
	}
	spec.Components = make([]coordinator.Component, len(names))
	for i, name := range names {
		spec.Components[i] = coordinator.Component{Name: name}
	}
	spec.link()
	spec.cutProseCycles()
	if err := CheckComponents(spec.Components); err != nil {
		return nil, err
	}
	return spec, nil
}

func didYouMean(word string, names []string, self string) string {
	others := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == self })
	if s := suggest.Closest(word, others); s != "" {
		return " (did you mean " + s + "?)"
	}
	return ""
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
	known := newComponentNames(sorted)
	left := make(map[string]bool, len(sorted))
	for _, n := range sorted {
		left[n] = true
	}
	var order []string
	take := func(word string) {
		if n := known.lookup(word); n != "" && left[n] {
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

// componentNames finds the component a word names: exactly, or else in
// another case when that is unambiguous (prose capitalises: "Identity
// verification"). A map, as every word of every bullet is looked up.
type componentNames struct {
	exact map[string]bool
	fold  map[string]string // lower case -> the name; "" when two names fold alike
}

func newComponentNames(names []string) *componentNames {
	x := &componentNames{exact: make(map[string]bool, len(names)), fold: make(map[string]string, len(names))}
	for _, n := range names {
		x.exact[n] = true
		l := strings.ToLower(n)
		if _, dup := x.fold[l]; dup {
			x.fold[l] = ""
		} else {
			x.fold[l] = n
		}
	}
	return x
}

func (x *componentNames) lookup(word string) string {
	if x.exact[word] {
		return word
	}
	return x.fold[strings.ToLower(word)]
}

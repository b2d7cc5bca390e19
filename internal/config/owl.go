package config

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/agentforeman/foreman/coordinator"
)

// ReadOwlSpec reads the components of an owl spec directory, as the owl
// reference coordinator does: each DIR/components/NAME.md is a component
// NAME, and the "- name" bullets under a "depends on:" line are its
// dependencies. Owl specs are prose, so a bullet may name something outside
// the build ("- owl spec: component requirements"); such bullets are not
// dependencies, and each one skipped is returned as a note.
//
// Declaration order is the order product.md links the components in, then
// any others by name.
func ReadOwlSpec(dir string) ([]coordinator.Component, []string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "components", "*.md"))
	if err != nil {
		return nil, nil, err
	}
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("%s has no components/*.md", dir)
	}
	bodies := make(map[string]string, len(files))
	var order []string
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".md")
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		bodies[name] = string(b)
		order = append(order, name)
	}
	sort.Strings(order)
	if product, err := os.ReadFile(filepath.Join(dir, "product.md")); err == nil {
		order = productOrder(string(product), order)
	}

	var comps []coordinator.Component
	var notes []string
	for _, name := range order {
		c := coordinator.Component{Name: name}
		for _, dep := range dependsOn(bodies[name]) {
			switch {
			case bodies[dep] != "" && !contains(c.Deps, dep):
				c.Deps = append(c.Deps, dep)
			case bodies[dep] == "":
				notes = append(notes, fmt.Sprintf("components/%s.md: %q is not a component of this spec; read as an outside requirement", name, dep))
			}
		}
		comps = append(comps, c)
	}
	if err := CheckComponents(comps); err != nil {
		return nil, nil, err
	}
	return comps, notes, nil
}

var productLink = regexp.MustCompile(`\(components/([^)/]+)\.md\)`)

// productOrder puts the components in the order product.md links them.
func productOrder(product string, sorted []string) []string {
	known := make(map[string]bool, len(sorted))
	for _, n := range sorted {
		known[n] = true
	}
	var order []string
	for _, m := range productLink.FindAllStringSubmatch(product, -1) {
		if known[m[1]] {
			order = append(order, m[1])
			delete(known, m[1])
		}
	}
	for _, n := range sorted {
		if known[n] {
			order = append(order, n)
		}
	}
	return order
}

var (
	dependsOnLine = regexp.MustCompile(`(?i)^[*_\s]*depends on[*_\s]*:[*_\s]*$`)
	bulletLine    = regexp.MustCompile(`^\s*[-*+]\s+(.*)$`)
	linkText      = regexp.MustCompile(`^\[([^\]]+)\]\(([^)]*)\)`)
)

// dependsOn returns the leading name of each bullet under every
// "depends on:" line. A bullet reads "- name", "- name: why", "- name - why"
// or "- [name](link) - why"; decoration around the name is dropped.
func dependsOn(body string) []string {
	var deps []string
	in := false
	for _, line := range strings.Split(body, "\n") {
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
		if name := bulletName(m[1]); name != "" {
			deps = append(deps, name)
		}
	}
	return deps
}

func bulletName(s string) string {
	s = strings.TrimSpace(strings.NewReplacer("`", "", "**", "").Replace(s))
	if m := linkText.FindStringSubmatch(s); m != nil {
		s = m[1]
	}
	if i := strings.IndexAny(s, ":,;("); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, " - "); i >= 0 {
		s = s[:i]
	}
	return strings.ToLower(strings.TrimSpace(s))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// real is path with its symbolic links resolved as far as it exists: a
// path not made yet is where it would be made (a link above it followed),
// since Landlock rules name what a path resolves to, and a file made later
// is reached the same way.
func real(path string) string {
	rest := ""
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		if p == filepath.Dir(p) {
			return filepath.Clean(path)
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}

// within reports whether path is dir or lies inside it.
func within(path, dir string) bool {
	if dir == "/" {
		return true
	}
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// CheckPaths refuses, with the key to change, a path of
// host.sandbox_paths that is not absolute, holds or lies inside a file of
// the host's (Deny), holds HOME, or holds or lies inside host.repo (Repo:
// its config and hooks are the host's; checks get what git needs of it
// without asking). It looks at the configuration only: foreman validate
// says it before anything runs.
func (c Config) CheckPaths() error {
	d := newDenied(c)
	repo := ""
	if c.Repo != "" {
		repo = real(c.Repo)
	}
	for _, list := range []struct {
		key   string
		paths []string
	}{{"host.sandbox_paths.ro", c.RO}, {"host.sandbox_paths.rw", c.RW}} {
		for i, p := range list.paths {
			key := fmt.Sprintf("%s[%d]", list.key, i)
			if !filepath.IsAbs(p) {
				return fmt.Errorf("%s: %s is not an absolute path", key, p)
			}
			if err := d.check(real(p)); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			if repo != "" && (within(repo, real(p)) || within(real(p), repo)) {
				return fmt.Errorf("%s: %s holds or lies inside host.repo (%s), whose config and hooks are the host's; checks read what git needs of it without it", key, p, c.Repo)
			}
		}
	}
	if c.GitDir != "" {
		if err := d.check(real(c.GitDir)); err != nil {
			return fmt.Errorf("host.repo: its git directory %w", err)
		}
	}
	return nil
}

// denied is the Deny list resolved, with HOME: a rule may lie inside HOME
// (the caches), never hold it.
type denied struct {
	paths []Denied // resolved
	home  string
}

func newDenied(c Config) denied {
	d := denied{home: real(c.Home)}
	for _, p := range c.Deny {
		if p.Path != "" {
			d.paths = append(d.paths, Denied{Key: p.Key, Path: real(p.Path)})
		}
	}
	return d
}

// check refuses a path a rule would grant: one holding a denied path or
// HOME, or inside a denied path.
func (d denied) check(path string) error {
	if d.home != "" && d.home != "/" && within(d.home, path) {
		return fmt.Errorf("%s holds HOME (%s); name the cache directories in it instead", path, d.home)
	}
	for _, p := range d.paths {
		if within(p.Path, path) {
			return fmt.Errorf("%s holds %s (%s), which checks must not reach; name a narrower directory", path, p.Key, p.Path)
		}
		if within(path, p.Path) {
			return fmt.Errorf("%s is inside %s (%s), which checks must not reach", path, p.Key, p.Path)
		}
	}
	return nil
}

// holds reports whether a rule on path would reach something denied.
func (d denied) holds(path string) bool {
	if d.home != "" && within(d.home, path) {
		return true
	}
	for _, p := range d.paths {
		if within(p.Path, path) {
			return true
		}
	}
	return false
}

// hit reports whether path is, or lies inside, something denied.
func (d denied) hit(path string) bool {
	if d.home != "" && path == d.home {
		return true
	}
	for _, p := range d.paths {
		if within(path, p.Path) {
			return true
		}
	}
	return false
}

// grants are the paths a rule names, directories and files apart
// (Landlock takes directory rights on directories only).
type grants struct {
	dirs, files []string
}

func (g *grants) add(path string, dir bool) {
	if dir {
		g.dirs = append(g.dirs, path)
	} else {
		g.files = append(g.files, path)
	}
}

// around grants root, or, when root holds something denied, everything
// in it but the way to that (recursively), so that a system directory
// holding the host's files (/opt/foreman/host.json) is granted around
// them.
func around(root string, d denied, g *grants) {
	fi, err := os.Stat(root)
	if err != nil {
		return
	}
	if d.hit(real(root)) {
		return
	}
	if !fi.IsDir() || !d.holds(real(root)) {
		g.add(root, fi.IsDir())
		return
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		around(filepath.Join(root, e.Name()), d, g)
	}
}

// everyone grants what every user of the machine may read under root
// (for /etc: not shadow, not ssl/private), around what is denied. A
// directory is granted whole when everything in it is; a symbolic link to
// a file is granted (its target is what Landlock sees) even inside a
// directory granted whole, since the target may lie elsewhere.
func everyone(root string, d denied, g *grants) {
	walkEveryone(root, d, g)
}

// walkEveryone returns whether everything under path may be granted; if
// not, it has added to g what may.
func walkEveryone(path string, d denied, g *grants) bool {
	li, err := os.Lstat(path)
	if err != nil {
		return false
	}
	if li.Mode()&os.ModeSymlink != 0 {
		target := real(path)
		fi, err := os.Stat(path)
		if err != nil || fi.IsDir() || fi.Mode().Perm()&0o004 == 0 || d.hit(target) {
			return false // a link to a directory is not followed
		}
		g.add(path, false)
		return true
	}
	if d.hit(path) || li.Mode().Perm()&0o004 == 0 {
		return false
	}
	if !li.IsDir() {
		if !li.Mode().IsRegular() {
			return false // sockets, fifos, devices: not read as files
		}
		g.add(path, false)
		return true
	}
	if li.Mode().Perm()&0o001 == 0 {
		return false // others may not enter it
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return false
	}
	var inner grants
	// One holding a denied path is never granted whole, even when that
	// path is not made yet: foreman makes some after it has looked
	// (telemetry's secret, the journal), and Landlock would let them be
	// read.
	clean := !d.holds(path)
	for _, e := range entries {
		if !walkEveryone(filepath.Join(path, e.Name()), d, &inner) {
			clean = false
		}
	}
	if clean {
		g.add(path, true)
		// Links inside still need their own rule: their targets may lie
		// outside this directory.
		for _, f := range inner.files {
			if fi, err := os.Lstat(f); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				g.add(f, false)
			}
		}
		return true
	}
	g.dirs = append(g.dirs, inner.dirs...)
	g.files = append(g.files, inner.files...)
	return false
}

// MakeHome makes the private HOME of a run, inside its private directory: an
// empty directory, but for the caches of host.sandbox_paths under the host
// user's HOME, linked at the same place (private ~/.cache/go-build ->
// /root/.cache/go-build), so that tools find them where they look by
// default. It returns the HOME's path.
func (c Config) MakeHome(private string) (string, error) {
	home := filepath.Join(private, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return "", err
	}
	top := filepath.Clean(c.Home)
	var rels []string
	for _, p := range append(append([]string{}, c.RO...), c.RW...) {
		if rel, err := filepath.Rel(top, p); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			rels = append(rels, rel)
		}
	}
	sort.Strings(rels)
	var linked []string
	for _, rel := range rels {
		inside := false
		for _, l := range linked {
			if within(rel, l) {
				inside = true // reached through the link above it
			}
		}
		if inside {
			continue
		}
		at := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(at), 0o700); err != nil {
			return "", err
		}
		if err := os.Symlink(filepath.Join(top, rel), at); err != nil && !os.IsExist(err) {
			return "", err
		}
		linked = append(linked, rel)
	}
	return home, nil
}

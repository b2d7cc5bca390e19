// Package mcpconfig writes foreman's MCP server (foreman mcp, with the
// agent's key and room) where each agent CLI reads its MCP servers in an
// agent's workspace, and approves it there, so that the CLI started in
// that workspace with HOME set to the agent's home starts it without
// asking anyone:
//
//   - Claude Code: the project's .mcp.json in the workspace; a project
//     server waits for a person's approval ("Pending approval") unless the
//     user's settings name it, so home/.claude/settings.json lists it in
//     enabledMcpjsonServers (Claude Code ignores that key in the
//     workspace's own .claude/settings*.json) and allows its tools
//     (permissions.allow mcp__NAME).
//   - gemini-cli: the workspace's .gemini/settings.json (mcpServers, the
//     server trusted: its tools run without confirmation); gemini-cli
//     reads no workspace settings, and starts no MCP server at all, in a
//     folder that is not trusted, so home/.gemini/trustedFolders.json
//     trusts the workspace (TRUST_FOLDER).
//   - Codex: [mcp_servers.NAME] in config.toml under CODEX_HOME
//     (home/.codex, codex's default under HOME), and the workspace as a
//     trusted project there.
//
// What is written into the workspace is kept out of git (.git/info/exclude)
// so that an agent does not commit its key's path; a .mcp.json or
// .gemini/settings.json the target repository tracks is merged all the
// same, and then shows as changed in the agent's clone. Files that exist are
// merged: other servers and settings stay; foreman's entry is replaced.
// Every file is written whole (a temporary file renamed over it), mode 0600:
// the server's environment may hold a token.
//
// The formats are those of the versions pinned in
// internal/tooling/realagents/testdata/clis, whose test runs each CLI's own
// MCP listing in a workspace Write wrote (TestAgentCLIsListForeman).
package mcpconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	toml "github.com/pelletier/go-toml/v2"
)

// The CLIs Write knows.
const (
	Claude = "claude" // Claude Code, npm @anthropic-ai/claude-code
	Codex  = "codex"  // OpenAI Codex CLI, npm @openai/codex
	Gemini = "gemini" // gemini-cli, npm @google/gemini-cli
)

// CLIs are the CLIs Write knows, in the order WriteAll writes them.
var CLIs = []string{Claude, Codex, Gemini}

// DefaultName is the server's name in each CLI's configuration when
// Server.Name is empty: Claude Code calls its tools mcp__foreman__claim...
const DefaultName = "foreman"

// Server is foreman's MCP server as an agent's CLI starts it.
type Server struct {
	// Name is the server's name in the CLI's configuration; "" is
	// DefaultName.
	Name string
	// Command is the program, by absolute path: a CLI starts it from
	// anywhere, often without foreman on PATH.
	Command string
	// Args are its arguments (mcp --identity KEY --url ... CONFIG).
	Args []string
	// Env is what the CLI adds to the server's environment.
	Env map[string]string
}

// Write writes server where cli (Claude, Codex or Gemini) reads it when
// started in workspace with HOME=home (and, for Codex, CODEX_HOME as Env
// says), and approves it there. workspace and home must exist. It returns
// what it wrote: each file, and the directories above it in workspace or
// home (made now, or there before), with their links resolved.
func Write(workspace, home, cli string, server Server) ([]string, error) {
	w, err := place(workspace, home, server)
	if err != nil {
		return nil, err
	}
	switch cli {
	case Claude:
		err = w.claude()
	case Codex:
		err = w.codex()
	case Gemini:
		err = w.gemini()
	default:
		return nil, fmt.Errorf("mcpconfig: unknown agent CLI %q: give one of %s", cli, strings.Join(CLIs, ", "))
	}
	if err != nil {
		return nil, err
	}
	return *w.wrote, nil
}

// WriteAll writes server for every CLI in CLIs, and returns what it wrote
// as Write does.
func WriteAll(workspace, home string, server Server) ([]string, error) {
	var wrote []string
	for _, cli := range CLIs {
		paths, err := Write(workspace, home, cli, server)
		if err != nil {
			return nil, err
		}
		wrote = append(wrote, paths...)
	}
	slices.Sort(wrote)
	return slices.Compact(wrote), nil
}

// Env is the environment an agent's CLI needs, besides its own, to read
// what Write wrote for home: HOME, and CODEX_HOME (codex's default, said
// so that a CODEX_HOME inherited from foreman's environment does not
// win).
func Env(home string) []string {
	return []string{"HOME=" + home, "CODEX_HOME=" + CodexHome(home)}
}

// CodexHome is the CODEX_HOME of an agent whose HOME is home.
func CodexHome(home string) string { return filepath.Join(home, ".codex") }

// writer holds one Write's checked arguments, and what it wrote.
type writer struct {
	ws, home string // absolute, links resolved: the paths the CLIs compare
	s        Server
	wrote    *[]string
}

// note notes rel within base as written, and the directories above it
// there.
func (w writer) note(base, rel string) {
	for ; rel != "." && rel != string(filepath.Separator); rel = filepath.Dir(rel) {
		*w.wrote = append(*w.wrote, filepath.Join(base, rel))
	}
}

func place(workspace, home string, s Server) (writer, error) {
	if s.Name == "" {
		s.Name = DefaultName
	}
	if strings.ContainsAny(s.Name, " .\"'[]/\\") || s.Name != strings.TrimSpace(s.Name) {
		return writer{}, fmt.Errorf("mcpconfig: server name %q: use letters, digits, _ or -", s.Name)
	}
	if !filepath.IsAbs(s.Command) {
		return writer{}, fmt.Errorf("mcpconfig: server command %q is not an absolute path: a CLI starts it from anywhere; give foreman's full path", s.Command)
	}
	var err error
	w := writer{s: s, wrote: new([]string)}
	if w.ws, err = dir("workspace", workspace); err != nil {
		return writer{}, err
	}
	if w.home, err = dir("home", home); err != nil {
		return writer{}, err
	}
	return w, nil
}

// dir resolves an existing directory to the absolute path without links
// that the CLIs compare against their working directory.
func dir(what, p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return "", fmt.Errorf("mcpconfig: %s %s: %w (make it before writing its MCP config)", what, p, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("mcpconfig: %s %s is not a directory", what, p)
	}
	return abs, nil
}

func (w writer) env() map[string]string {
	if w.s.Env == nil {
		return map[string]string{}
	}
	return w.s.Env
}

func (w writer) args() []string {
	if w.s.Args == nil {
		return []string{}
	}
	return w.s.Args
}

func (w writer) claude() error {
	if err := w.editJSON(w.ws, ".mcp.json", func(doc map[string]any) error {
		servers, err := object(doc, "mcpServers")
		if err != nil {
			return err
		}
		servers[w.s.Name] = map[string]any{"type": "stdio", "command": w.s.Command, "args": w.args(), "env": w.env()}
		return nil
	}); err != nil {
		return err
	}
	if err := w.exclude(w.ws, "/.mcp.json"); err != nil {
		return err
	}
	return w.editJSON(w.home, ".claude/settings.json", func(doc map[string]any) error {
		if err := addString(doc, "enabledMcpjsonServers", w.s.Name); err != nil {
			return err
		}
		perms, err := object(doc, "permissions")
		if err != nil {
			return err
		}
		return addString(perms, "allow", "mcp__"+w.s.Name)
	})
}

func (w writer) gemini() error {
	if err := w.editJSON(w.ws, ".gemini/settings.json", func(doc map[string]any) error {
		servers, err := object(doc, "mcpServers")
		if err != nil {
			return err
		}
		servers[w.s.Name] = map[string]any{"command": w.s.Command, "args": w.args(), "env": w.env(), "trust": true}
		return nil
	}); err != nil {
		return err
	}
	if err := w.exclude(w.ws, "/.gemini/settings.json"); err != nil {
		return err
	}
	return w.editJSON(w.home, ".gemini/trustedFolders.json", func(doc map[string]any) error {
		doc[w.ws] = "TRUST_FOLDER"
		return nil
	})
}

func (w writer) codex() error {
	path := filepath.Join(CodexHome(w.home), "config.toml")
	rel, _ := filepath.Rel(w.home, path)
	doc := map[string]any{}
	if b, err := readFile(w.home, rel); err == nil {
		if err := toml.Unmarshal(b, &doc); err != nil {
			return fmt.Errorf("mcpconfig: %s is not TOML (%v): fix or remove it", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("mcpconfig: %w", err)
	}
	servers, err := object(doc, "mcp_servers")
	if err != nil {
		return fmt.Errorf("mcpconfig: %s: %w", path, err)
	}
	servers[w.s.Name] = map[string]any{"command": w.s.Command, "args": w.args(), "env": w.env()}
	projects, err := object(doc, "projects")
	if err != nil {
		return fmt.Errorf("mcpconfig: %s: %w", path, err)
	}
	projects[w.ws] = map[string]any{"trust_level": "trusted"}
	b, err := toml.Marshal(doc)
	if err != nil {
		return fmt.Errorf("mcpconfig: %s: %w", path, err)
	}
	return w.writeFile(w.home, rel, b)
}

// The files written are in an agent's workspace and HOME, which the agent
// may change between two starts: each is reached within its directory
// (os.Root), so that a link the agent left there (.git/info/exclude to
// /etc/sudoers, .claude to another agent's HOME) is refused, never
// followed out of it by foreman, which may be root.

// maxRead is the most foreman reads of a file an agent controls: its
// MCP configs are a few hundred bytes.
const maxRead = 1 << 20

// readFile reads rel within base.
func readFile(base, rel string) ([]byte, error) {
	r, err := os.OpenRoot(base)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return readIn(r, base, rel)
}

// readIn reads rel within r (at base): a regular file of at most maxRead
// bytes, never blocking on one the agent made something else (a FIFO left
// there would hold foreman up at its start), nor reading a huge one whole.
// A file that does not exist is an error satisfying os.ErrNotExist; every
// other names the file.
func readIn(r *os.Root, base, rel string) ([]byte, error) {
	path := filepath.Join(base, rel)
	f, err := r.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	refused := fmt.Errorf("%s: not a regular file of at most 1 MiB; remove it, foreman up writes it again", path)
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxRead {
		return nil, refused
	}
	b, err := io.ReadAll(io.LimitReader(f, maxRead+1)) // +1: one grown since
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > maxRead {
		return nil, refused
	}
	return b, nil
}

// editJSON reads the JSON object at rel within base (none: an empty
// one), lets edit change it and writes it back.
func (w writer) editJSON(base, rel string, edit func(map[string]any) error) error {
	path := filepath.Join(base, rel)
	doc := map[string]any{}
	if b, err := readFile(base, rel); err == nil {
		if len(bytes.TrimSpace(b)) > 0 {
			if err := json.Unmarshal(b, &doc); err != nil {
				return fmt.Errorf("mcpconfig: %s is not a JSON object (%v): fix or remove it", path, err)
			}
			if doc == nil {
				doc = map[string]any{}
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("mcpconfig: %w", err)
	}
	if err := edit(doc); err != nil {
		return fmt.Errorf("mcpconfig: %s: %w", path, err)
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("mcpconfig: %s: %w", path, err)
	}
	return w.writeFile(base, rel, append(b, '\n'))
}

// object returns doc[key] as an object, made if missing.
func object(doc map[string]any, key string) (map[string]any, error) {
	switch v := doc[key].(type) {
	case nil:
		m := map[string]any{}
		doc[key] = m
		return m, nil
	case map[string]any:
		return v, nil
	}
	return nil, fmt.Errorf("%s is a %T, not an object: fix or remove it", key, doc[key])
}

// addString adds s to the list of strings doc[key], made if missing.
func addString(doc map[string]any, key, s string) error {
	var list []any
	switch v := doc[key].(type) {
	case nil:
	case []any:
		list = v
	default:
		return fmt.Errorf("%s is a %T, not a list: fix or remove it", key, doc[key])
	}
	if !slices.Contains(list, any(s)) {
		list = append(list, s)
	}
	doc[key] = list
	return nil
}

// exclude keeps pattern out of the git repository at ws, if it is one
// with its own .git directory (a clone), so that the agent does not
// commit its own MCP config.
func (w writer) exclude(ws, pattern string) error {
	r, err := os.OpenRoot(ws)
	if err != nil {
		return fmt.Errorf("mcpconfig: %w", err)
	}
	defer r.Close()
	if fi, err := r.Lstat(".git"); err != nil || !fi.IsDir() {
		return nil
	}
	const path = ".git/info/exclude"
	b, err := readIn(r, ws, path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("mcpconfig: %w", err)
	}
	if slices.Contains(strings.Split(string(b), "\n"), pattern) {
		return nil
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	b = append(b, pattern+"\n"...)
	// Written whole as the others: a hard link the agent left there is
	// replaced, never written through.
	return w.writeFile(ws, path, b)
}

// writeFile writes b to rel within base whole: a CLI starting meanwhile
// reads the old file or the new one, never half of one.
func (w writer) writeFile(base, rel string, b []byte) error {
	path := filepath.Join(base, rel)
	r, err := os.OpenRoot(base)
	if err != nil {
		return fmt.Errorf("mcpconfig: %w", err)
	}
	defer r.Close()
	if err := r.MkdirAll(filepath.Dir(rel), 0o700); err != nil {
		return fmt.Errorf("mcpconfig: writing %s: %w", path, err)
	}
	tmp := filepath.Join(filepath.Dir(rel), "."+filepath.Base(rel)+".tmp"+strconv.Itoa(os.Getpid()))
	_ = r.Remove(tmp) // one a foreman stopped midway left
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("mcpconfig: writing %s: %w", path, err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(0o600)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = r.Rename(tmp, rel)
	}
	if err != nil {
		_ = r.Remove(tmp)
		return fmt.Errorf("mcpconfig: writing %s: %w", path, err)
	}
	w.note(base, rel)
	return nil
}

//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// cgroups is where the host makes each check's cgroup: under its own
// cgroup, in the memory and pids hierarchies of cgroup v1 (as on the
// project's machines: the controllers mounted read-write, the host root),
// or in the unified hierarchy of cgroup v2 where the host's cgroup is
// delegated to it (the memory and pids controllers available there, and
// the host allowed to write it: systemd's Delegate=yes, or a root host).
//
// The kernel then counts all a check's memory, whatever holds it (its
// processes' pages, shared memory held by no process, SysV segments,
// memfds in flight on a socket, tmpfs files, the page cache it fills), and
// keeps it under the limit: at the limit, reclaim, then the OOM killer.
// Swap is no way out (memory.memsw, memory.swap.max). The pids controller
// bounds its processes and threads: fork fails past the limit.
type cgroups struct {
	v2      bool
	memory  string // the directory checks' cgroups are made in (v2: both controllers)
	pids    string // v1: the pids hierarchy's ("" if not mounted)
	swapKey string // the file that bounds memory and swap together ("" if none)
}

// cgroupSeq numbers this process's check cgroups: one sequence whatever
// the sandbox (a worker has several), so no two names meet.
var cgroupSeq atomic.Int64

// cgroupPrefix names the host's check cgroups: foreman-check-<host pid>-<n>.
const cgroupPrefix = "foreman-check-"

// findCgroups finds where this host may make its checks' cgroups, or says
// why it cannot.
func findCgroups() (*cgroups, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	own, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	var v1why string
	if m, ok := mounts["memory"]; ok {
		g := &cgroups{memory: m.dir(own["memory"])}
		if p, ok := mounts["pids"]; ok {
			g.pids = p.dir(own["pids"])
		}
		if exists(filepath.Join(g.memory, "memory.memsw.limit_in_bytes")) {
			g.swapKey = "memory.memsw.limit_in_bytes"
		}
		if err := g.try(); err == nil {
			return g, nil
		} else {
			v1why = err.Error()
		}
	}
	if m, ok := mounts[""]; ok {
		g := &cgroups{v2: true, memory: m.dir(own[""]), swapKey: "memory.swap.max"}
		if err := g.delegate(); err != nil {
			if v1why != "" {
				return nil, fmt.Errorf("cgroup v1: %s; cgroup v2: %v", v1why, err)
			}
			return nil, fmt.Errorf("cgroup v2: %w", err)
		}
		if err := g.try(); err != nil {
			return nil, err
		}
		return g, nil
	}
	if v1why != "" {
		return nil, errors.New("cgroup v1: " + v1why)
	}
	return nil, errors.New("no cgroup hierarchy with the memory controller is mounted")
}

// mount is one cgroup hierarchy as this process sees it.
type mount struct{ point, root string }

// dir is the directory of the cgroup at path (as /proc/self/cgroup says
// it) in this mount.
func (m mount) dir(path string) string {
	rel := strings.TrimPrefix(path, m.root)
	return filepath.Join(m.point, rel)
}

// cgroupMounts maps each v1 controller (memory, pids) to its hierarchy's
// mount, and "" to the unified (v2) one.
func cgroupMounts() (map[string]mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]mount{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent maj:min root point options [optional...] - type source super
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, fl := range fields {
			if fl == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || sep+1 >= len(fields) {
			continue
		}
		typ, super := fields[sep+1], ""
		if sep+3 < len(fields) {
			super = fields[sep+3]
		}
		m := mount{point: unescape(fields[4]), root: unescape(fields[3])}
		switch typ {
		case "cgroup2":
			if _, seen := out[""]; !seen {
				out[""] = m
			}
		case "cgroup":
			for _, opt := range strings.Split(super, ",") {
				if opt == "memory" || opt == "pids" {
					if _, seen := out[opt]; !seen {
						out[opt] = m
					}
				}
			}
		}
	}
	return out, sc.Err()
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroups maps each v1 controller to this process's cgroup in it, and
// "" to its v2 cgroup.
func ownCgroups() (map[string]string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out, nil
}

// delegate makes the host's v2 cgroup one whose children have the memory
// and pids controllers. A cgroup with processes in it cannot give its
// children controllers (the "no internal processes" rule), so a host that
// is alone in its cgroup (a service with Delegate=yes) moves itself to a
// leaf of it first, as systemd's documentation asks of a delegated
// service.
func (g *cgroups) delegate() error {
	controllers, err := os.ReadFile(filepath.Join(g.memory, "cgroup.controllers"))
	if err != nil {
		return err
	}
	for _, c := range []string{"memory", "pids"} {
		if !hasWord(controllers, c) {
			return fmt.Errorf("the %s controller is not available in %s (cgroup.controllers: %s): delegate it to the host (systemd: Delegate=yes)", c, g.memory, strings.TrimSpace(string(controllers)))
		}
	}
	enabled, err := os.ReadFile(filepath.Join(g.memory, "cgroup.subtree_control"))
	if err != nil {
		return err
	}
	if hasWord(enabled, "memory") && hasWord(enabled, "pids") {
		return nil
	}
	enable := func() error {
		return os.WriteFile(filepath.Join(g.memory, "cgroup.subtree_control"), []byte("+memory +pids"), 0)
	}
	if err := enable(); err == nil {
		return nil
	} else if !errors.Is(err, syscall.EBUSY) {
		return fmt.Errorf("enabling memory and pids for %s's children: %w", g.memory, err)
	}
	procs, err := os.ReadFile(filepath.Join(g.memory, "cgroup.procs"))
	if err != nil {
		return err
	}
	if others := strings.Fields(string(procs)); len(others) != 1 || others[0] != strconv.Itoa(os.Getpid()) {
		return fmt.Errorf("%s holds other processes than the host (%d), so its children cannot have the memory controller: run the host in a cgroup of its own", g.memory, len(others))
	}
	leaf := filepath.Join(g.memory, "foreman-host")
	if err := os.Mkdir(leaf, 0o755); err != nil && !os.IsExist(err) {
		return err
	}
	if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
		return fmt.Errorf("moving the host to %s: %w", leaf, err)
	}
	if err := enable(); err != nil {
		return fmt.Errorf("enabling memory and pids for %s's children: %w", g.memory, err)
	}
	return nil
}

func hasWord(data []byte, w string) bool {
	for _, f := range strings.Fields(string(data)) {
		if f == w {
			return true
		}
	}
	return false
}

// try makes and removes a cgroup, to know the host may; it also removes
// what a host of the same pid left (one killed outright).
func (g *cgroups) try() error {
	for _, parent := range []string{g.memory, g.pids} {
		if parent == "" {
			continue
		}
		old, _ := filepath.Glob(filepath.Join(parent, cgroupPrefix+"*"))
		for _, dir := range old {
			if pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(dir), cgroupPrefix), "-", 2)[0]); err == nil && !alive(pid) {
				_ = os.Remove(dir) // empty: its host is gone
			}
		}
	}
	c, err := g.make(Limits{}.WithDefaults())
	if err != nil {
		return err
	}
	return c.remove()
}

func alive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) == nil
}

// cgroup is one check's: a directory in each hierarchy (one, with v2).
type cgroup struct {
	g      *cgroups
	memory string
	pids   string   // v1 only
	dir    *os.File // v2: the directory, for CLONE_INTO_CGROUP
}

// make makes a check's cgroup with limits l.
func (g *cgroups) make(l Limits) (*cgroup, error) {
	name := cgroupPrefix + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(cgroupSeq.Add(1), 10)
	c := &cgroup{g: g, memory: filepath.Join(g.memory, name)}
	if err := os.Mkdir(c.memory, 0o755); err != nil {
		return nil, fmt.Errorf("making the check's cgroup %s: %w", c.memory, err)
	}
	limit := strconv.FormatInt(l.Memory, 10)
	var writes [][2]string
	if g.v2 {
		writes = [][2]string{{"memory.max", limit}, {"memory.swap.max", "0"}, {"memory.oom.group", "1"},
			{"pids.max", strconv.Itoa(l.Tasks)}}
	} else {
		// memsw is memory and swap together: set after memory, which it
		// may not be below. Without it (swap accounting off), swappiness
		// 0 keeps the check's pages out of swap.
		writes = [][2]string{{"memory.limit_in_bytes", limit}, {"memory.swappiness", "0"}}
		if g.swapKey != "" {
			writes = append(writes, [2]string{g.swapKey, limit})
		}
	}
	for _, w := range writes {
		if err := os.WriteFile(filepath.Join(c.memory, w[0]), []byte(w[1]), 0); err != nil {
			if w[0] == "memory.swap.max" && errors.Is(err, os.ErrNotExist) {
				continue // no swap accounting: no swap to escape to
			}
			_ = c.remove()
			return nil, fmt.Errorf("setting %s of the check's cgroup: %w", w[0], err)
		}
	}
	if !g.v2 && g.pids != "" {
		c.pids = filepath.Join(g.pids, name)
		if err := os.Mkdir(c.pids, 0o755); err != nil {
			c.pids = ""
			_ = c.remove()
			return nil, fmt.Errorf("making the check's pids cgroup: %w", err)
		}
		if err := os.WriteFile(filepath.Join(c.pids, "pids.max"), []byte(strconv.Itoa(l.Tasks)), 0); err != nil {
			_ = c.remove()
			return nil, fmt.Errorf("setting pids.max of the check's cgroup: %w", err)
		}
	}
	if g.v2 {
		dir, err := os.Open(c.memory)
		if err != nil {
			_ = c.remove()
			return nil, err
		}
		c.dir = dir
	}
	return c, nil
}

// join puts process pid (the stage, waiting for what to do: the check has
// not run yet) in the cgroup, with all its threads; its children are born
// there. v2 needs none of it: the stage is made in it (CLONE_INTO_CGROUP).
func (c *cgroup) join(pid int) error {
	if c.g.v2 {
		return nil
	}
	for _, dir := range []string{c.memory, c.pids} {
		if dir == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("putting the check in its cgroup %s: %w", dir, err)
		}
	}
	return nil
}

// over says each limit the check met: the kernel OOM-killed one of its
// processes, or refused it a fork.
func (c *cgroup) over(l Limits) []string {
	var out []string
	if c.counter(c.pidsDir(), "pids.events", "max") > 0 {
		out = append(out, fmt.Sprintf("ran more than %d processes and threads (host.sandbox_limits.processes)", l.Tasks))
	}
	file := "memory.oom_control"
	if c.g.v2 {
		file = "memory.events"
	}
	if c.counter(c.memory, file, "oom_kill") > 0 {
		out = append(out, fmt.Sprintf("used more than %s of memory (host.sandbox_limits.memory)", Size(l.Memory)))
	}
	return out
}

func (c *cgroup) pidsDir() string {
	if c.g.v2 {
		return c.memory
	}
	return c.pids
}

// counter reads one "key value" line of a cgroup's file; 0 if none.
func (c *cgroup) counter(dir, file, key string) int64 {
	if dir == "" {
		return 0
	}
	data, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		k, v, ok := bytes.Cut(line, []byte(" "))
		if ok && string(k) == key {
			n, _ := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			return n
		}
	}
	return 0
}

// remove kills whatever is left in the cgroup (nothing, once the check's
// PID namespace is gone: the kernel ended it) and removes it.
func (c *cgroup) remove() error {
	if c.dir != nil {
		c.dir.Close()
	}
	var errs []error
	for _, dir := range []string{c.memory, c.pids} {
		if dir == "" {
			continue
		}
		if c.g.v2 {
			_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
		}
		var err error
		for try := 0; try < 200; try++ {
			killAll(dir)
			if err = os.Remove(dir); err == nil || os.IsNotExist(err) {
				err = nil
				break
			}
			time.Sleep(5 * time.Millisecond) // the last of them exiting
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("removing the check's cgroup: %w", err))
		}
	}
	return errors.Join(errs...)
}

func killAll(dir string) {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

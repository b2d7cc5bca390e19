//go:build linux

package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentforeman/foreman/internal/checkspec"
)

// Interval is how often the host sums what each running check uses. A
// check can overshoot a limit by what it allocates or forks in one
// interval.
const Interval = 100 * time.Millisecond

// watcher sums, every Interval, the memory and tasks of every process of
// each running check, and stops a check over a limit. One goroutine
// serves all the checks running at once, and only while there are some.
//
// A check's processes are its first process (PID 1 of its namespace: a
// process that loses its parent is given to it) and all that descend from
// it, found from the parent of every process in /proc/<pid>/stat, which
// anyone may read (this kernel may not have /proc/<pid>/task/*/children).
type watcher struct {
	mu      sync.Mutex
	procs   map[*Process]bool
	running bool
	page    int64
}

func newWatcher() *watcher {
	return &watcher{procs: map[*Process]bool{}, page: int64(os.Getpagesize())}
}

func (w *watcher) add(p *Process) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.procs[p] = true
	if !w.running {
		w.running = true
		go w.loop()
	}
}

func (w *watcher) remove(p *Process) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.procs, p)
}

func (w *watcher) loop() {
	t := time.NewTicker(Interval)
	defer t.Stop()
	for range t.C {
		w.mu.Lock()
		if len(w.procs) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		procs := make([]*Process, 0, len(w.procs))
		for p := range w.procs {
			procs = append(procs, p)
		}
		w.mu.Unlock()
		w.check(procs)
	}
}

// usage is what one check uses.
type usage struct {
	memory int64 // bytes of anonymous resident memory
	tasks  int   // processes and threads
}

func (w *watcher) check(procs []*Process) {
	roots := make(map[int]*Process, len(procs))
	for _, p := range procs {
		if over := p.s.overDisk(p, false); over != "" {
			p.stop(over)
			continue
		}
		if p.cg != nil {
			// The kernel keeps it under its limits: the watcher only
			// says when it refused something, and stops the check.
			if over := p.cg.over(p.s.c.Limits); len(over) > 0 {
				p.stop(strings.Join(over, ", and "))
				continue
			}
			if p.cg.g.v2 || p.cg.pids != "" {
				continue
			}
		}
		roots[p.pid()] = p
	}
	if len(roots) == 0 {
		return
	}
	for pid, u := range w.measure(roots) {
		p := roots[pid]
		l := p.s.c.Limits
		// Each limit it is over is said, processes first: a fork bomb's
		// memory is its processes', and which one a late poll sees first
		// must not change what the check is told.
		var over []string
		if u.tasks > l.Tasks {
			over = append(over, fmt.Sprintf("ran more than %d processes and threads (host.sandbox_limits.processes)", l.Tasks))
		}
		if u.memory > l.Memory && p.cg == nil {
			over = append(over, fmt.Sprintf("used more than %s of memory (host.sandbox_limits.memory)", checkspec.Size(l.Memory)))
		}
		if len(over) > 0 {
			p.stop(strings.Join(over, ", and "))
		}
	}
}

// measure sums the usage of each root's tree of processes.
func (w *watcher) measure(roots map[int]*Process) map[int]usage {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	threads := map[int]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, n, ok := readStat(pid)
		if !ok {
			continue
		}
		children[ppid] = append(children[ppid], pid)
		threads[pid] = n
	}
	out := make(map[int]usage, len(roots))
	for root := range roots {
		if _, alive := threads[root]; !alive {
			continue
		}
		var u usage
		memfds := map[[2]uint64]int64{} // by device and inode: one memfd open in several processes counts once
		queue := []int{root}
		for len(queue) > 0 {
			pid := queue[0]
			queue = queue[1:]
			u.tasks += threads[pid]
			if roots[root].s.c.Without.SharedMemory {
				u.memory += w.anon(pid)
			} else {
				u.memory += w.resident(pid)
				w.memfds(pid, memfds)
			}
			queue = append(queue, children[pid]...)
		}
		if !roots[root].s.c.Without.SharedMemory {
			for _, n := range memfds {
				u.memory += n
			}
			u.memory += shmUsed(root)
		}
		out[root] = u
	}
	return out
}

// readStat reads a process's parent and thread count from
// /proc/<pid>/stat.
func readStat(pid int) (ppid, threads int, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid ...: comm may hold anything, so read after
	// its last parenthesis.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(data[i+1:])
	if len(f) < 18 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	threads, err2 := strconv.Atoi(string(f[17]))
	return ppid, threads, err1 == nil && err2 == nil
}

// resident is the memory a process made, from /proc/<pid>/status: its
// anonymous pages and its shared ones (RssShmem: MAP_SHARED anonymous
// memory, a mapped memfd or /dev/shm file), not the files and libraries it
// maps, which the kernel may drop. Shared memory mapped by several of the
// check's processes counts once for each: the count errs on the high side.
func (w *watcher) resident(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	var total int64
	for _, line := range bytes.Split(data, []byte("\n")) {
		name, rest, ok := bytes.Cut(line, []byte(":"))
		if !ok || !bytes.Equal(name, []byte("RssAnon")) && !bytes.Equal(name, []byte("RssShmem")) {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			continue
		}
		if kb, err := strconv.ParseInt(string(f[0]), 10, 64); err == nil {
			total += kb << 10
		}
	}
	return total
}

// memfds adds the memory files a process holds open (memfd_create), by
// the blocks each holds, written or mapped: memory that no process need
// map to use.
func (w *watcher) memfds(pid int, seen map[[2]uint64]int64) {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		link, err := os.Readlink(dir + "/" + e.Name())
		if err != nil || !strings.HasPrefix(link, "/memfd:") {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(dir+"/"+e.Name(), &st) != nil {
			continue
		}
		seen[[2]uint64{uint64(st.Dev), st.Ino}] = st.Blocks * 512
	}
}

// shmUsed is what a check holds in its private /dev/shm, a tmpfs of its
// own: memory, whoever maps it.
func shmUsed(root int) int64 {
	var st syscall.Statfs_t
	if syscall.Statfs("/proc/"+strconv.Itoa(root)+"/root/dev/shm", &st) != nil || st.Type != tmpfsMagic {
		return 0
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize
}

// tmpfsMagic is statfs's f_type of a tmpfs.
const tmpfsMagic = 0x01021994

// anon is a process's anonymous resident memory, from /proc/<pid>/statm
// (resident less shared, in pages): what it allocated, not the files and
// libraries it maps, which the kernel may drop and which processes share.
func (w *watcher) anon(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0
	}
	f := bytes.Fields(data)
	if len(f) < 3 {
		return 0
	}
	resident, err1 := strconv.ParseInt(string(f[1]), 10, 64)
	shared, err2 := strconv.ParseInt(string(f[2]), 10, 64)
	if err1 != nil || err2 != nil || resident < shared {
		return 0
	}
	return (resident - shared) * w.page
}

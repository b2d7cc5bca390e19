//go:build linux

package sandbox

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"
)

// How what a check writes is bounded (Sandbox.disk).
const (
	// diskVolumes: by the kernel, each check's writes in a volume of its
	// own (see volume), the builders' caches in one of theirs.
	diskVolumes = "volumes"
	// diskPolled: the check writes the host's disk; the host sums what
	// its worktree and private directory hold every Interval (less often
	// when a sum takes long: it spends a tenth of its time summing at
	// most), and stops it past the bound; the caches are summed at each
	// run's start.
	diskPolled = "polled"
)

// The directories of a check's volume: the upper layers (and overlayfs's
// work directories) of its worktree and private directory, and its run's
// own copies of the RW paths when no builder is known.
var volumeDirs = []string{"tree", "tree.work", "home", "home.work", "layers"}

// disks are what a sandbox polls.
type disks struct {
	mu       sync.Mutex
	baseline map[string]int64 // polled: what a worktree and private directory held at their run's start
}

func newDisks() *disks {
	return &disks{baseline: map[string]int64{}}
}

// volumes are every volume this process holds, by image: one image is
// attached once, whichever sandbox asks for it (a worker makes one per set
// of limits, over the same slots and caches), since two loop devices on
// one image would be two filesystems writing it. Each volume is let go of
// by the sandbox that last used it.
var volumes = struct {
	sync.Mutex
	by    map[string]*volume
	user  map[*volume]*Sandbox
	inUse map[string]int // builders with a check running now (their caches are not evicted)
}{by: map[string]*volume{}, user: map[*volume]*Sandbox{}, inUse: map[string]int{}}

// volumeFor is the volume of image, bound as asked, taken by s: the one
// held already, or, of another bound, that one let go of and the image
// made again.
func (s *Sandbox) volumeFor(image string, bound int64, fresh func(*volume) error) (*volume, error) {
	volumes.Lock()
	defer volumes.Unlock()
	if v := volumes.by[image]; v != nil {
		if v.bound == bound && v.uid == s.owner() {
			volumes.user[v] = s
			return v, nil
		}
		v.close()
		delete(volumes.by, image)
		delete(volumes.user, v)
	}
	v, err := openVolume(image, bound, s.owner())
	if err != nil {
		return nil, err
	}
	if err := fresh(v); err != nil {
		v.close()
		return nil, err
	}
	volumes.by[image], volumes.user[v] = v, s
	return v, nil
}

// owner is who owns what a check may write in a volume: the user it runs
// as.
func (s *Sandbox) owner() int {
	if s.nobody {
		return Nobody
	}
	return os.Getuid()
}

// checkVolume is the volume of r's worktree (an image beside it, made on
// first use), sized host.sandbox_limits.disk.
func (s *Sandbox) checkVolume(r Run) (*volume, error) {
	bound := s.c.Limits.Disk
	if r.diskSize > 0 {
		bound = r.diskSize
	}
	return s.volumeFor(filepath.Clean(r.Worktree)+".disk", bound, func(v *volume) error { return v.clear(volumeDirs...) })
}

// cachesVolume is the volume of every builder's copies of the RW paths,
// beside Config.Layers, sized host.sandbox_limits.caches.
func (s *Sandbox) cachesVolume() (*volume, error) {
	return s.volumeFor(filepath.Clean(s.c.Layers)+".disk", s.c.Limits.Caches, func(v *volume) error {
		v.measureBase() // what the builders' copies hold counts, not ext4's own
		return nil
	})
}

// builderLayer makes, in the caches volume, the builder's copy of the
// i-th RW path, and notes its use (the least recently used are evicted
// first).
func (s *Sandbox) builderLayer(v *volume, builder string, i int) (string, error) {
	rel := filepath.Join(layerName(builder), fmt.Sprint(i))
	p := v.path(rel)
	if err := os.MkdirAll(p, 0o755); err != nil {
		return "", err
	}
	for _, d := range []string{v.path(layerName(builder)), p} {
		if err := os.Chown(d, v.uid, v.uid); err != nil {
			return "", err
		}
	}
	now := time.Now()
	_ = os.Chtimes(v.path(layerName(builder)), now, now)
	return rel, nil
}

// Fresh readies r for a run of the checks (call it before the first
// command): its volume emptied of what the last run wrote, or, polled,
// what it holds now noted; and room made in the caches, evicting the
// builders' copies least recently used when they hold more than three
// quarters of host.sandbox_limits.caches, down to half.
func (s *Sandbox) Fresh(r Run) error {
	switch s.disk {
	case diskVolumes:
		v, err := s.checkVolume(r)
		if err != nil {
			return fmt.Errorf("sandbox: the check's disk: %w", err)
		}
		// A volume the last run wrote nothing to (as most checks of
		// their worktree) is left as it is.
		if n, _ := v.written(); n != 0 || !v.pristine() {
			if err := v.clear(volumeDirs...); err != nil {
				return fmt.Errorf("sandbox: the check's disk: %w", err)
			}
		}
	case diskPolled:
		held := diskUsage(r.Worktree, r.Private)
		s.disks.mu.Lock()
		s.disks.baseline[r.Worktree] = held
		s.disks.mu.Unlock()
	}
	s.evict(r.Layer)
	return nil
}

// evict makes room in the caches (see Fresh), never taking a copy of a
// builder whose check runs now, nor keep's.
func (s *Sandbox) evict(keep string) {
	if s.c.Layers == "" || s.c.Without.CacheLayers || s.disk == "" || len(s.rw.dirs) == 0 {
		return
	}
	root, size, used := s.c.Layers, s.c.Limits.Caches, int64(0)
	if s.disk == diskVolumes {
		v, err := s.cachesVolume()
		if err != nil {
			return
		}
		root = v.path("")
		used, _ = v.written()
	} else {
		used = diskUsage(root)
	}
	if used <= size/4*3 {
		return
	}
	entries, _ := os.ReadDir(root)
	type layer struct {
		name string
		at   time.Time
	}
	var layers []layer
	volumes.Lock()
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "lost+found" || e.Name() == layerName(keep) || volumes.inUse[e.Name()] > 0 {
			continue
		}
		if fi, err := e.Info(); err == nil {
			layers = append(layers, layer{name: e.Name(), at: fi.ModTime()})
		}
	}
	volumes.Unlock()
	sort.Slice(layers, func(i, j int) bool { return layers[i].at.Before(layers[j].at) })
	for _, l := range layers {
		if used <= size/2 {
			return
		}
		dir := filepath.Join(root, l.name)
		held := diskUsage(dir)
		if os.RemoveAll(dir) == nil {
			used -= held
		}
	}
}

// using notes that a check of builder runs now (n = 1) or ended (-1).
func (s *Sandbox) using(builder string, n int) {
	if builder == "" {
		return
	}
	volumes.Lock()
	defer volumes.Unlock()
	volumes.inUse[layerName(builder)] += n
}

// overDisk says the disk bound p's check met, "" if none: its volume, or
// the caches', full; polled, what it wrote past host.sandbox_limits.disk
// (summed when it is time, or when last is set: at the end).
func (s *Sandbox) overDisk(p *Process, last bool) string {
	l := s.c.Limits
	disk := fmt.Sprintf("wrote more than %s to its worktree and TMPDIR (host.sandbox_limits.disk)", Size(l.Disk))
	switch {
	case p.vol != nil && p.vol.over():
		return disk
	case p.caches != nil && p.caches.over():
		return fmt.Sprintf("filled the caches: every builder's copies of host.sandbox_paths.rw hold %s together (host.sandbox_limits.caches)", Size(l.Caches))
	case s.disk == diskPolled:
		// The watcher's look and Done's last one do not overlap.
		p.pollMu.Lock()
		defer p.pollMu.Unlock()
		if !last && time.Since(p.polled) < max(Interval, 10*p.pollCost) {
			return ""
		}
		s.disks.mu.Lock()
		base, ok := s.disks.baseline[p.run.Worktree]
		s.disks.mu.Unlock()
		start := time.Now()
		held := diskUsage(p.run.Worktree, p.run.Private)
		p.polled, p.pollCost = time.Now(), time.Since(start)
		if ok && held-base > l.Disk {
			return disk
		}
	}
	return ""
}

// diskUsage is what the files under dirs take on disk, links not followed.
func diskUsage(dirs ...string) int64 {
	var n int64
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(_ string, e fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if fi, err := e.Info(); err == nil {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok {
					n += st.Blocks * 512
				}
			}
			return nil
		})
	}
	return n
}

// Close lets go of the volumes the sandbox was the last to use: once the
// checks it confined ended. A host's end does it too.
func (s *Sandbox) Close() {
	if s == nil {
		return
	}
	volumes.Lock()
	defer volumes.Unlock()
	for image, v := range volumes.by {
		if volumes.user[v] == s {
			v.close()
			delete(volumes.by, image)
			delete(volumes.user, v)
		}
	}
}

// forget lets go of r's volume (the probe's, whose image goes with its
// directory).
func (s *Sandbox) forget(r Run) {
	image := filepath.Clean(r.Worktree) + ".disk"
	volumes.Lock()
	if v := volumes.by[image]; v != nil {
		v.close()
		delete(volumes.by, image)
		delete(volumes.user, v)
	}
	volumes.Unlock()
	s.disks.mu.Lock()
	delete(s.disks.baseline, r.Worktree)
	s.disks.mu.Unlock()
}

// DiskRoom says, when the filesystem of dir (host.work) has less room
// than parallel checks and the caches may take of it, what to do about it;
// "" when it has room, or no bound applies.
func (s *Sandbox) DiskRoom(dir string, parallel int) string {
	if s == nil || s.disk == "" {
		return ""
	}
	for dir != "/" && !exists(dir) {
		dir = filepath.Dir(dir)
	}
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil {
		return ""
	}
	l := s.c.Limits
	free, need := int64(st.Bavail)*st.Bsize, int64(parallel)*volumeSize(l.Disk)+volumeSize(l.Caches)
	if free >= need {
		return ""
	}
	return fmt.Sprintf("host.work: its filesystem has %s free, and checks may write up to %s there (host.max_parallel %d × host.sandbox_limits.disk %s, and host.sandbox_limits.caches %s, and ext4's own), beside the ledger and logs if they share it: lower the bounds, or give host.work a filesystem of its own",
		roughSize(free), roughSize(need), parallel, Size(l.Disk), Size(l.Caches))
}

// roughSize writes a byte count in MiB or GiB, rounded down.
func roughSize(n int64) string {
	if n >= 10<<30 {
		return fmt.Sprintf("%dGiB", n>>30)
	}
	return fmt.Sprintf("%dMiB", n>>20)
}

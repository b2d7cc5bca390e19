//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// A volume is a filesystem of a bounded size of the host's: an ext4 image
// (sparse: it takes on disk what is written in it, and gives back what is
// deleted: discard), attached to a loop device, and mounted nowhere the
// host's users could look: the host holds it as a detached mount (fsmount),
// and each check command's stage mounts the device where only it sees it
// (the kernel shares the one superblock: microseconds). So what a check
// writes lands in the volume, never on the host's disk, and no more of it
// than the volume holds: the kernel says ENOSPC. When the host ends,
// killed outright too, its descriptor closes, the filesystem is unmounted
// and the loop device freed: nothing is left mounted.
//
// A check's volume holds what it writes to its worktree and private
// directory (TMPDIR, HOME): each is an overlay there, over the host's own
// (read-only below), with its upper directory in the volume. The builders'
// copies of host.sandbox_paths.rw are in one volume of their own, for all
// of them (host.sandbox_limits.caches).
//
// The kernel's bound is the volume's room: its bound (what may be written
// in it), and overshoot more. Past the bound, the host stops the check and
// says so; the overshoot lets it see that before the kernel refuses a
// write, and a check that fills the volume anyway (faster than the host
// looks) has written more than its bound too: told ENOSPC, then stopped.
// Either way it wrote overshoot more than its bound at most.
type volume struct {
	mu    sync.Mutex // mnt: the watcher reads it as a sandbox's Close lets go of it
	image string
	bound int64
	size  int64
	dev   string   // /dev/loopN
	mnt   *os.File // the detached mount: the host's way in, /proc/self/fd/N
	uid   int      // who owns what the check may write in it
	base  int64    // what it held when last emptied (ext4's own)
}

// overshoot is what a volume has room for past its bound: the most a
// check writes past host.sandbox_limits.disk (issue 45: at most 64 MiB).
const overshoot = 32 << 20

// ext4 of one inode per 16 KiB of 256 bytes (mkfs.ext4's default for all
// but small filesystems, asked for by name so that a small one is alike):
// its inode tables take 1/64 of it, its bitmaps 2 blocks per group of 128
// MiB, and no blocks are reserved for growth (^resize_inode); the kernel
// keeps 1/50 of it or 16 MiB, the less, for its own metadata. So what a
// volume has room for follows from its size, and its size is chosen from
// its room (TestAVolumesRoomIsItsBoundAndLittleMore).
const (
	inodeRatio = 16384
	inodeSize  = 256
)

// volumeSize is the size of a volume's image with room for bound and
// overshoot: ext4's own blocks added.
func volumeSize(bound int64) int64 {
	room := bound + overshoot
	size := room + room/(inodeRatio/inodeSize-1) + room/8192 + 1<<20
	size += min(size/49, 16<<20)
	return (size + 4095) / 4096 * 4096
}

// mkfs is e2fsprogs' mkfs.ext4, found once.
var mkfs = sync.OnceValues(func() (string, error) {
	for _, p := range []string{"mkfs.ext4", "/sbin/mkfs.ext4", "/usr/sbin/mkfs.ext4"} {
		if path, err := exec.LookPath(p); err == nil {
			return path, nil
		}
	}
	return "", errors.New("no mkfs.ext4 (install e2fsprogs)")
})

// openVolume makes the volume whose image is image (or takes the one there,
// made before of this size), owned by uid at its root, and holds it.
func openVolume(image string, bound int64, uid int) (*volume, error) {
	size := volumeSize(bound)
	v := &volume{image: image, bound: bound, size: size, uid: uid}
	fi, err := os.Stat(image)
	fresh := err != nil || fi.Size() != size
	if !fresh {
		if err := v.attach(); err == nil {
			return v, nil
		}
		fresh = true // damaged (a crash mid-write): made again
	}
	if err := v.format(); err != nil {
		return nil, err
	}
	if err := v.attach(); err != nil {
		return nil, err
	}
	return v, nil
}

// format makes an empty ext4 of size in the image: no journal (a volume is
// scratch: one a crash damaged is made again), no space kept for root.
func (v *volume) format() error {
	bin, err := mkfs()
	if err != nil {
		return err
	}
	_ = os.Remove(v.image)
	f, err := os.OpenFile(v.image, os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	err = f.Truncate(v.size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, "-q", "-F", "-m", "0", "-O", "^has_journal,^resize_inode", "-b", "4096",
		"-i", strconv.Itoa(inodeRatio), "-I", strconv.Itoa(inodeSize),
		"-E", "lazy_itable_init=1,nodiscard,root_owner="+strconv.Itoa(v.uid)+":"+strconv.Itoa(v.uid), v.image)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("mkfs.ext4 %s: %v: %s", v.image, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// attach puts the image on a free loop device (freed when nothing holds
// it: autoclear) and mounts it, detached.
func (v *volume) attach() error {
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loop devices: %w", err)
	}
	defer ctl.Close()
	img, err := os.OpenFile(v.image, os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer img.Close()
	for try := 0; ; try++ {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return fmt.Errorf("a free loop device: %w", err)
		}
		dev := "/dev/loop" + strconv.Itoa(n)
		loop, err := os.OpenFile(dev, os.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", dev, err)
		}
		cfg := unix.LoopConfig{Fd: uint32(img.Fd())}
		// Direct I/O to the image: its pages are cached once, by the
		// volume's filesystem, not twice (the kernel leaves it off where
		// the image's filesystem cannot).
		cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR | unix.LO_FLAGS_DIRECT_IO
		copy(cfg.Info.File_name[:], v.image)
		err = unix.IoctlLoopConfigure(int(loop.Fd()), &cfg)
		if errors.Is(err, unix.EINVAL) {
			cfg.Info.Flags &^= unix.LO_FLAGS_DIRECT_IO
			err = unix.IoctlLoopConfigure(int(loop.Fd()), &cfg)
		}
		if errors.Is(err, unix.EBUSY) && try < 16 {
			loop.Close() // taken meanwhile by another
			continue
		}
		if err != nil {
			loop.Close()
			return fmt.Errorf("attaching %s to %s: %w", v.image, dev, err)
		}
		v.dev = dev
		err = v.mount()
		loop.Close() // the superblock holds it now, or nothing does
		return err
	}
}

// mount mounts the device, detached: the host's descriptor holds it.
func (v *volume) mount() error {
	fs, err := unix.Fsopen("ext4", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("ext4: %w", err)
	}
	defer unix.Close(fs)
	if err := unix.FsconfigSetString(fs, "source", v.dev); err != nil {
		return fmt.Errorf("ext4 on %s: %w", v.dev, err)
	}
	if err := unix.FsconfigSetFlag(fs, "discard"); err != nil {
		return fmt.Errorf("ext4 on %s: discard: %w", v.dev, err)
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return fmt.Errorf("mounting %s (ext4 on %s): %w", v.image, v.dev, err)
	}
	m, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return fmt.Errorf("mounting %s: %w", v.image, err)
	}
	v.mnt = os.NewFile(uintptr(m), v.image)
	return nil
}

// path is rel in the volume, as the host reaches it.
func (v *volume) path(rel string) string {
	return filepath.Join("/proc/self/fd/"+strconv.Itoa(int(v.mnt.Fd())), rel)
}

// written is what was written in the volume since it was last emptied,
// and whether it has no file left to make.
func (v *volume) written() (int64, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var st unix.Statfs_t
	if v.mnt == nil || unix.Fstatfs(int(v.mnt.Fd()), &st) != nil {
		return 0, false
	}
	return int64(st.Blocks-st.Bfree)*st.Bsize - v.base, st.Ffree == 0
}

// over reports whether more than its bound was written (or every inode
// taken).
func (v *volume) over() bool {
	n, noFile := v.written()
	return n > v.bound || noFile
}

// clear empties dirs of the volume and makes them again, the check's.
func (v *volume) clear(dirs ...string) error {
	for _, d := range dirs {
		p := v.path(d)
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("clearing %s of %s: %w", d, v.image, err)
		}
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
		if err := os.Chown(p, v.uid, v.uid); err != nil {
			return err
		}
	}
	v.measureBase()
	return nil
}

// pristine reports whether the volume's directories hold nothing: no
// file, no directory, no link (what written cannot see: a file of no
// blocks, a link that fits in its inode).
func (v *volume) pristine() bool {
	for _, d := range volumeDirs {
		entries, err := os.ReadDir(v.path(d))
		if err != nil || len(entries) > 0 && !(d == "tree.work" || d == "home.work") {
			return false
		}
	}
	return true
}

// measureBase takes what the volume holds that no file does (ext4's own
// blocks) as its empty state.
func (v *volume) measureBase() {
	v.base = 0
	held, _ := v.written()
	v.base = held - diskUsage(v.path(""))
}

func (v *volume) close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.mnt != nil {
		v.mnt.Close()
		v.mnt = nil
	}
}

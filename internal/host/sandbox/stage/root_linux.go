//go:build linux

package stage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The devices of the check's /dev, bound from the host's.
var devices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// buildRoot makes the check's filesystem in s.Root and makes it the root:
// a tmpfs holding only what the host listed, each path at its own place,
// read-only unless it may be written; a fresh /proc of the check's PID
// namespace; a /dev of a few devices and a private /dev/shm; /tmp (the
// run's private directory where nothing the check needs lies under /tmp).
// The old root is then detached: nothing else of the host's filesystem
// can be named.
func buildRoot(s *Spec) error {
	root := filepath.Clean(s.Root)
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making / private: %w", err)
	}
	if err := unix.Mount("tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m,mode=755"); err != nil {
		return fmt.Errorf("a tmpfs for the new root at %s: %w", root, err)
	}
	b := &builder{root: root, setIDOK: s.SetIDOK}
	for i, dev := range s.Volumes {
		if err := b.volume(i, dev); err != nil {
			return err
		}
	}
	mounts := append([]Mount(nil), s.Mounts...)
	// Parents before children: a path inside another mount is bound over
	// what that mount holds, never made there.
	sort.SliceStable(mounts, func(i, j int) bool { return depth(mounts[i].Path()) < depth(mounts[j].Path()) })
	for _, m := range mounts {
		if err := b.mount(m); err != nil {
			return fmt.Errorf("%s: %w", m.Path(), err)
		}
	}
	if s.Tmp != "" {
		// The private directory as the check has it: an overlay in the
		// new root when its writes go to a volume.
		tmp := Mount{Source: s.Tmp, Target: "/tmp", Write: true}
		for _, m := range mounts {
			if m.Path() == s.Tmp && m.Volume > 0 {
				tmp.Source = root + s.Tmp
			}
		}
		if err := b.mount(tmp); err != nil {
			return fmt.Errorf("/tmp: %w", err)
		}
	}
	for _, f := range s.Files {
		if err := b.file(f); err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	// The volumes and the layers below the overlays were mounted where
	// the check would see them: the binds and overlays made of them hold
	// them now.
	if err := b.unstage(); err != nil {
		return err
	}
	if err := b.dir("/tmp", 0o755); err != nil { // if nothing was mounted there
		return err
	}
	if err := b.proc(); err != nil {
		return err
	}
	if err := b.dev(s.Shm); err != nil {
		return err
	}
	old := filepath.Join(root, ".old")
	if err := unix.Mkdir(old, 0o700); err != nil {
		return fmt.Errorf("making the old root's mount point: %w", err)
	}
	if err := unix.PivotRoot(root, old); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	if err := unix.Unmount("/.old", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the old root: %w", err)
	}
	if err := unix.Rmdir("/.old"); err != nil {
		return err
	}
	// The root's own tmpfs is read-only: the check writes where it may,
	// nowhere else.
	if err := unix.Mount("", "/", "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("making the new root read-only: %w", err)
	}
	return nil
}

func depth(p string) int { return strings.Count(filepath.Clean(p), "/") }

// builder makes paths in the new root, before it is the root.
type builder struct {
	root    string
	mounted []string // targets mounted so far
	setIDOK bool     // writable binds without nosuid (a test's)
	volumes []string // where each of Spec.Volumes is mounted, for now
	lowers  int      // overlays' lower layers staged so far
}

// staging is where, in the new root, the stage mounts what it needs only
// while it builds: each volume, and the idmapped lower layer of each
// overlay. Unmounted before the check runs.
const staging = "/.stage"

// volume mounts the i-th volume's device at its staging place. The host
// holds its filesystem mounted, so this mount shares its superblock.
func (b *builder) volume(i int, dev string) error {
	dir := b.root + staging + "/volume-" + strconv.Itoa(i)
	if err := mkdirAll(dir); err != nil {
		return err
	}
	if err := unix.Mount(dev, dir, "ext4", unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("mounting the check's volume %s: %w", dev, err)
	}
	b.volumes = append(b.volumes, dir)
	return nil
}

// unstage unmounts and removes the staging places.
func (b *builder) unstage() error {
	if len(b.volumes) == 0 && b.lowers == 0 {
		return nil
	}
	for i := 0; i < b.lowers; i++ {
		if err := unix.Unmount(b.root+staging+"/lower-"+strconv.Itoa(i), unix.MNT_DETACH); err != nil {
			return fmt.Errorf("unmounting a staged lower layer: %w", err)
		}
	}
	for _, dir := range b.volumes {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("unmounting a staged volume: %w", err)
		}
	}
	entries, _ := os.ReadDir(b.root + staging)
	for _, e := range entries {
		_ = unix.Rmdir(b.root + staging + "/" + e.Name())
	}
	return unix.Rmdir(b.root + staging)
}

// overlay mounts at dst an overlay of src (idmapped when idmap), whose
// upper directory, where every write lands, is upper in volume vol.
func (b *builder) overlay(src, dst string, vol int, upper string, idmap bool) error {
	if vol < 1 || vol > len(b.volumes) {
		return fmt.Errorf("no volume %d", vol)
	}
	lower := src
	if idmap {
		lower = b.root + staging + "/lower-" + strconv.Itoa(b.lowers)
		if err := mkdirAll(lower); err != nil {
			return err
		}
		if err := idmapped(src, lower, true); err != nil {
			return err
		}
		b.lowers++
	}
	up := b.volumes[vol-1] + "/" + upper
	opts := "lowerdir=" + overlayPath(lower) + ",upperdir=" + overlayPath(up) + ",workdir=" + overlayPath(up+".work")
	if err := unix.Mount("overlay", dst, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("an overlay of %s, its writes in the check's volume (overlayfs, with an idmapped lower layer: Linux 5.19): %w", src, err)
	}
	return nil
}

// overlayPath escapes what overlayfs reads as separators in its options.
func overlayPath(p string) string {
	return strings.NewReplacer(`\`, `\\`, `,`, `\,`, `:`, `\:`).Replace(p)
}

// inside reports whether target lies inside something already mounted:
// there nothing is made (it would be made in the host's own files).
func (b *builder) inside(target string) bool {
	for _, m := range b.mounted {
		if target != m && strings.HasPrefix(target, m+"/") {
			return true
		}
	}
	return false
}

// place makes target in the new root, a directory or an empty file, with
// the directories above it.
func (b *builder) place(target string, file bool) (string, error) {
	target = filepath.Clean(target)
	if !filepath.IsAbs(target) || target == "/" {
		return "", fmt.Errorf("not an absolute path below /")
	}
	dst := b.root + target
	var st unix.Stat_t
	if b.inside(target) {
		// Inside another mount: what is there is bound over, if it is
		// what it should be.
		if err := unix.Stat(dst, &st); err != nil {
			return "", fmt.Errorf("lies inside another path of the check's and is not there: %w", err)
		}
		if isDirMode(st.Mode) == file {
			return "", errors.New("lies inside another path of the check's, and is not of the kind to bind here")
		}
		return dst, nil
	}
	if err := mkdirAll(filepath.Dir(dst)); err != nil {
		return "", err
	}
	if file {
		fd, err := unix.Open(dst, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o644)
		if err != nil {
			return "", err
		}
		unix.Close(fd)
		return dst, nil
	}
	if err := unix.Mkdir(dst, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return "", err
	}
	return dst, nil
}

func isDirMode(m uint32) bool { return m&unix.S_IFMT == unix.S_IFDIR }

// mkdirAll makes dir and its parents, in the new root's tmpfs.
func mkdirAll(dir string) error {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err == nil {
		if !isDirMode(st.Mode) {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	if err := mkdirAll(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := unix.Mkdir(dir, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return err
	}
	return nil
}

// mount binds m at its place.
func (b *builder) mount(m Mount) error {
	target := filepath.Clean(m.Path())
	if m.Link != "" {
		if b.inside(target) {
			return errors.New("a link inside another path of the check's")
		}
		dst := b.root + target
		if err := mkdirAll(filepath.Dir(dst)); err != nil {
			return err
		}
		return unix.Symlink(m.Link, dst)
	}
	dst, err := b.place(target, m.File)
	if err != nil {
		return err
	}
	if m.Volume > 0 && m.Upper != "" {
		if err := b.overlay(m.Source, dst, m.Volume, m.Upper, m.Idmap); err != nil {
			return err
		}
		b.mounted = append(b.mounted, target)
		return nil
	}
	if m.Volume > 0 {
		if m.Volume > len(b.volumes) {
			return fmt.Errorf("no volume %d", m.Volume)
		}
		m.Source, m.Idmap = b.volumes[m.Volume-1]+"/"+m.Source, false
	}
	// What the check may write is nosuid and nodev: a setuid file it
	// leaves there gives nobody anything, whoever runs it through the
	// check's mounts (/proc/<pid>/root).
	nosuid := m.Write && !b.setIDOK
	if m.Idmap {
		if err := idmapped(m.Source, dst, nosuid); err != nil {
			return err
		}
	} else if err := unix.Mount(m.Source, dst, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("binding %s: %w", m.Source, err)
	} else if nosuid {
		if err := unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
			return fmt.Errorf("making %s nosuid: %w", m.Source, err)
		}
	}
	b.mounted = append(b.mounted, target)
	if m.Write {
		return nil
	}
	return readOnly(dst)
}

// idmapped binds src at dst through the user namespace on UsernsFD: a
// detached copy of the mount (open_tree), given the mapping
// (mount_setattr), then put in place (move_mount).
func idmapped(src, dst string, nosuid bool) error {
	fd, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("cloning the mount of %s: %w", src, err)
	}
	defer unix.Close(fd)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: UsernsFD}
	if nosuid {
		attr.Attr_set |= unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
	}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return fmt.Errorf("mapping %s's owners for the check's user (an idmapped mount, which its filesystem may not support): %w", src, err)
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("putting %s in place: %w", src, err)
	}
	return nil
}

// readOnly makes the bind at dst read-only, keeping the flags a user
// namespace may not drop (nosuid, nodev, noexec, the atime flags).
func readOnly(dst string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dst, &st); err != nil {
		return err
	}
	const keep = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOATIME | unix.MS_NODIRATIME | unix.MS_RELATIME
	flags := uintptr(unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV) | uintptr(st.Flags)&keep
	if err := unix.Mount("", dst, "", flags, ""); err != nil {
		return fmt.Errorf("making it read-only: %w", err)
	}
	return nil
}

// file writes f in the new root, read-only to the check.
func (b *builder) file(f File) error {
	if b.inside(f.Path) {
		return errors.New("a file of the host's making inside another path of the check's")
	}
	dst := b.root + filepath.Clean(f.Path)
	if err := mkdirAll(filepath.Dir(dst)); err != nil {
		return err
	}
	fd, err := unix.Open(dst, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o444)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = unix.Write(fd, []byte(f.Content))
	return err
}

// dir makes an empty directory of the new root, unless something is there.
func (b *builder) dir(target string, mode uint32) error {
	dst := b.root + target
	if err := unix.Mkdir(dst, mode); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("%s: %w", target, err)
	}
	return nil
}

// proc mounts a /proc of the check's PID namespace.
func (b *builder) proc() error {
	if err := b.dir("/proc", 0o555); err != nil {
		return err
	}
	if err := unix.Mount("proc", b.root+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	return nil
}

// dev makes /dev: a tmpfs with the host's null, zero, full, random,
// urandom and tty bound in, the links a program expects (fd, stdin,
// stdout, stderr), and a /dev/shm of its own, of shm bytes at most.
func (b *builder) dev(shm int64) error {
	if err := b.dir("/dev", 0o755); err != nil {
		return err
	}
	dev := b.root + "/dev"
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "size=64k,mode=755"); err != nil {
		return fmt.Errorf("a tmpfs for /dev: %w", err)
	}
	for _, d := range devices {
		src := "/dev/" + d
		var st unix.Stat_t
		if unix.Stat(src, &st) != nil {
			continue
		}
		fd, err := unix.Open(dev+"/"+d, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o666)
		if err != nil {
			return err
		}
		unix.Close(fd)
		if err := unix.Mount(src, dev+"/"+d, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("binding %s: %w", src, err)
		}
	}
	for name, to := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := unix.Symlink(to, dev+"/"+name); err != nil {
			return err
		}
	}
	if err := unix.Mkdir(dev+"/shm", 0o1777); err != nil {
		return err
	}
	if shm <= 0 {
		shm = 64 << 20
	}
	if err := unix.Mount("tmpfs", dev+"/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size="+strconv.FormatInt(shm, 10)+",mode=1777"); err != nil {
		return fmt.Errorf("a private /dev/shm: %w", err)
	}
	// The tmpfs of /dev itself: nothing more is made in it.
	if err := unix.Mount("", dev, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("making /dev read-only: %w", err)
	}
	return nil
}

//go:build linux

// Package nofollow opens paths a check could have changed as the host must:
// below a directory of the host's own, no symbolic link followed at any
// component, nothing read but a regular file (a fifo would hang the host,
// a device feed it forever), and no more than a bound. A check runs as
// another user with no capability, but the host is root, or the host's
// user, and would otherwise go wherever a link of the check's sends it.
package nofollow

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Open opens rel beneath dir (a directory of the host's, opened as it is)
// with flags, following no link at any component of rel. Only a regular
// file or a directory is opened for real: anything else (a fifo, a device,
// a socket) is refused before it is opened, since opening some has effects.
func Open(dir, rel string, flags int) (*os.File, error) {
	fd, err := openPath(dir, rel)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG, unix.S_IFDIR:
	default:
		return nil, fmt.Errorf("%s: %s, not a regular file: not opened", filepath.Join(dir, rel), kind(st.Mode))
	}
	// Reopened through the O_PATH descriptor: the very file checked.
	f, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(fd), flags|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, rel), errors.Unwrap(err))
	}
	return f, nil
}

// ReadFile reads the regular file rel beneath dir, of max bytes at most.
func ReadFile(dir, rel string, max int64) ([]byte, error) {
	f, err := Open(dir, rel, os.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %s, not a regular file: not read", filepath.Join(dir, rel), fi.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes: not read", filepath.Join(dir, rel), max)
	}
	return data, nil
}

// MkdirAll makes rel beneath dir, each directory of it with mode (as
// os.MkdirAll, the umask applied), refusing a component that is anything
// but a directory (a link of the check's included).
func MkdirAll(dir, rel string, mode os.FileMode) error {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	parts, err := split(rel)
	if err != nil {
		unix.Close(fd)
		return err
	}
	at := dir
	for _, p := range parts {
		at = filepath.Join(at, p)
		if err := unix.Mkdirat(fd, p, uint32(mode.Perm())); err != nil && !errors.Is(err, unix.EEXIST) {
			unix.Close(fd)
			return fmt.Errorf("%s: %w", at, err)
		}
		next, err := unix.Openat(fd, p, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("%s: not a directory (%v): not followed", at, err)
		}
		fd = next
	}
	unix.Close(fd)
	return nil
}

// openPath opens rel beneath dir as O_PATH, following no link: with
// openat2 (Linux 5.6), else one component at a time.
func openPath(dir, rel string) (int, error) {
	parts, err := split(rel)
	if err != nil {
		return -1, err
	}
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("%s: %w", dir, err)
	}
	defer func() { unix.Close(dfd) }()
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(dfd, strings.Join(parts, "/"), &how)
	if err == nil {
		if err := notLink(fd); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("%s: %w", filepath.Join(dir, rel), err)
		}
		return fd, nil
	}
	if !errors.Is(err, unix.ENOSYS) {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
			return -1, fmt.Errorf("%s: goes through a symbolic link: not followed", filepath.Join(dir, rel))
		}
		return -1, fmt.Errorf("%s: %w", filepath.Join(dir, rel), err)
	}
	for i, p := range parts {
		flags := unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i < len(parts)-1 {
			flags |= unix.O_DIRECTORY
		}
		next, err := unix.Openat(dfd, p, flags, 0)
		if err != nil {
			return -1, fmt.Errorf("%s: %w", filepath.Join(dir, rel), err)
		}
		unix.Close(dfd)
		dfd = next
	}
	if err := notLink(dfd); err != nil {
		return -1, fmt.Errorf("%s: %w", filepath.Join(dir, rel), err)
	}
	fd, dfd = dfd, -1
	return fd, nil
}

// notLink refuses the link itself, which O_PATH|O_NOFOLLOW opens when it
// is the last component.
func notLink(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return errors.New("a symbolic link: not followed")
	}
	return nil
}

func split(rel string) ([]string, error) {
	var parts []string
	for _, p := range strings.Split(rel, "/") {
		switch p {
		case "", ".":
			continue
		case "..":
			return nil, fmt.Errorf("%s: leads out of its directory", rel)
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("%q: no path beneath the directory", rel)
	}
	return parts, nil
}

func kind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "a fifo"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFLNK:
		return "a symbolic link"
	}
	return "not a regular file"
}

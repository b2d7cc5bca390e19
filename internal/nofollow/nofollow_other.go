//go:build !linux

package nofollow

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Off Linux (where checks are not sandboxed, and foreman host runs them
// unconfined) each component is looked at before it is used: a check
// running at the same time could still swap one in between.

// Open opens rel beneath dir with flags, refusing a link at any component
// and anything but a regular file or a directory.
func Open(dir, rel string, flags int) (*os.File, error) {
	path, err := walk(dir, rel)
	if err != nil {
		return nil, err
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		return nil, fmt.Errorf("%s: %s, not a regular file: not opened", path, fi.Mode().Type())
	}
	return os.OpenFile(path, flags, 0)
}

// ReadFile reads the regular file rel beneath dir, of max bytes at most.
func ReadFile(dir, rel string, max int64) ([]byte, error) {
	f, err := Open(dir, rel, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file: not read", filepath.Join(dir, rel))
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

// MkdirAll makes rel beneath dir, refusing a component that is not a
// directory.
func MkdirAll(dir, rel string, mode os.FileMode) error {
	at := dir
	for _, p := range strings.Split(rel, "/") {
		if p == "" || p == "." {
			continue
		}
		if p == ".." {
			return fmt.Errorf("%s: leads out of its directory", rel)
		}
		at = filepath.Join(at, p)
		if err := os.Mkdir(at, mode); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		if fi, err := os.Lstat(at); err != nil || !fi.IsDir() {
			return fmt.Errorf("%s: not a directory: not followed", at)
		}
	}
	return nil
}

func walk(dir, rel string) (string, error) {
	at := dir
	for _, p := range strings.Split(rel, "/") {
		if p == "" || p == "." {
			continue
		}
		if p == ".." {
			return "", fmt.Errorf("%s: leads out of its directory", rel)
		}
		at = filepath.Join(at, p)
		fi, err := os.Lstat(at)
		if err != nil {
			return "", err
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return "", fmt.Errorf("%s: a symbolic link: not followed", at)
		}
	}
	return at, nil
}

//go:build linux

package sandbox

import (
	"errors"

	"github.com/landlock-lsm/go-landlock/landlock"
)

// What the agents foreman up starts (package agentbox) take of the
// checks' confinement: the same reading of the system, the same Landlock.

// Readable is what a confined process may read (and run) of the system:
// the system's directories, and of /etc what every user of the machine
// may read, around deny (a system directory holding one of them is
// granted around it).
func Readable(deny []Denied) (dirs, files []string) {
	d := newDenied(Config{Deny: deny})
	var g grants
	for _, dir := range systemDirs {
		around(dir, d, &g)
	}
	everyone("/etc", d, &g)
	return g.dirs, g.files
}

// Devices are the devices a confined process may read and write.
func Devices() []string { return append([]string{}, devices...) }

// Landlock is the Landlock configuration of this kernel's ABI (the
// network left to namespaces), and the ABI; an error where there is none.
func Landlock() (landlock.Config, int, error) {
	abi := landlockABI()
	if abi < 1 {
		return landlock.Config{}, 0, errors.New("this kernel has no Landlock (Linux 5.13 or later, built with CONFIG_SECURITY_LANDLOCK and landlock in the lsm= boot list)")
	}
	c := landlockConfigs[min(abi, len(landlockConfigs))-1]
	c.HandledAccessNet = 0
	return c, abi, nil
}

// HasCap reports whether this process holds capability c in its user
// namespace.
func HasCap(c int) bool { return hasCap(c) }

// Within reports whether path is dir or lies inside it.
func Within(path, dir string) bool { return within(path, dir) }

// Real is path with its symbolic links resolved as far as it exists: the
// place a path not made yet would be made (a link above it followed).
func Real(path string) string { return real(path) }

package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time (-ldflags "-X main.version=v1.2.3"); it
// wins over what the build info says.
var version = ""

// release is the version this source tree declares, bumped with each
// tagged release. It is the fallback when neither the build nor version
// control stamped a version: a binary built with -buildvcs=false (or from
// a copy without .git) still says which foreman it is.
const release = "v0.1.0"

func versionString() string {
	info, _ := debug.ReadBuildInfo()
	return fmt.Sprintf("foreman %s; %s %s/%s", moduleVersion(version, info), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// moduleVersion is the version of the foreman module this binary was built
// from: the one set at build time, else the module's as the build info
// has it (go install ...@v1.2.3, or the version Go stamps from the
// repository), else this source's release marked as a development build,
// with the commit when Go recorded one.
func moduleVersion(set string, info *debug.BuildInfo) string {
	if set != "" {
		return set
	}
	devel := release + "-devel"
	if info == nil {
		return devel + " (no build information)"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, when, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = ", modified"
			}
		}
	}
	if rev == "" {
		return devel + ", without version control information (built with -buildvcs=false, or outside the repository)"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if when != "" {
		when = " " + when
	}
	return devel + " (" + rev + when + dirty + ")"
}

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print foreman's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(a.stdout, versionString())
			return err
		},
	}
}

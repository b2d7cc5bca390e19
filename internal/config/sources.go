package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
)

// sources says where each key's value came from, for two things that
// depend on it: an error names what the user wrote (FOREMAN_RULES_X rather
// than rules.x when the variable set it), and a relative path is read from
// where the user wrote it.
type sources struct {
	file     string // the config file, "" if none
	flags    *pflag.FlagSet
	flagKeys map[string]string
}

// EnvVar is the environment variable that sets key.
func EnvVar(key string) string {
	return "FOREMAN_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// fromFlag reports whether a flag the user set gives key its value.
func (s sources) fromFlag(key string) bool {
	if s.flags == nil {
		return false
	}
	for name, k := range s.flagKeys {
		if k != key {
			continue
		}
		if f := s.flags.Lookup(name); f != nil && f.Changed {
			return true
		}
	}
	return false
}

// fromEnv reports whether the environment gives key its value (a flag
// would win). Viper ignores empty variables, and so does this.
func (s sources) fromEnv(key string) bool {
	return !s.fromFlag(key) && os.Getenv(EnvVar(key)) != ""
}

// path resolves a path value of key. One written in the config file, or
// defaulted there, is relative to the file, so that running the same config
// from another directory finds the same identity and journal; one given by
// a flag or the environment is relative to the working directory, as
// anything typed in a shell is.
func (s sources) path(key, value string) string {
	if value == "" || filepath.IsAbs(value) || s.file == "" || s.fromFlag(key) || s.fromEnv(key) {
		return value
	}
	return filepath.Join(filepath.Dir(s.file), value)
}

// origin names where key's value came from (see Config.Origin); inFile
// says whether the config file sets it.
func (s sources) origin(key string, inFile bool) string {
	switch {
	case s.fromFlag(key):
		for name, k := range s.flagKeys {
			if f := s.flags.Lookup(name); k == key && f != nil && f.Changed {
				return "--" + name
			}
		}
	case s.fromEnv(key):
		return EnvVar(key)
	case inFile:
		return key + " in " + s.file
	}
	return key + "'s default"
}

// rename makes an error about a key set by the environment name the
// variable, which is what the user has to fix.
func (s sources) rename(err error) error {
	var e *Error
	if errors.As(err, &e) && s.fromEnv(e.Key) {
		return &Error{Key: EnvVar(e.Key), Msg: e.Msg}
	}
	return err
}

package config

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/agentforeman/foreman/agentchat"
)

// SamePath reports whether two paths name the same file, as written
// (relative ones from the working directory).
func SamePath(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	aa, errA := filepath.Abs(a)
	ab, errB := filepath.Abs(b)
	return errA == nil && errB == nil && aa == ab
}

// RoomError names, in the error of a room that cannot be reached, where
// its URL came from: a flag, FOREMAN_SERVER_URL, or the config file.
func RoomError(err error, c *Config) error {
	var ue *agentchat.UnreachableError
	if !errors.As(err, &ue) {
		return err
	}
	return fmt.Errorf("cannot reach the chat server at %s (%d attempts; last: %v); the URL is %s: check it, and that the server runs",
		ue.URL, ue.Attempts, ue.Err, c.Origin("server.url"))
}

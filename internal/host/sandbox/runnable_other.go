//go:build !linux

package sandbox

// Runnable is nil where there is no sandbox: New refuses to make one.
func (c Config) Runnable() []string { return nil }

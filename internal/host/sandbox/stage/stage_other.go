//go:build !linux

package stage

// Off Linux there is no stage: the host refuses to sandbox checks.

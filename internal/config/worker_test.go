package config

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A check asks for labels in the map form; the plain strings of before
// stay valid beside it, and every check without labels may run anywhere.
func TestChecksWithLabels(t *testing.T) {
	path := writeConfig(t, minimal+`host:
  checks:
    - make test
    - {run: "make gpu-test", labels: [gpu, linux, gpu]}
    - run: sh -c 'nvidia-smi'
      labels: gpu
`)
	c, err := Load(path, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"make", "test"}, {"make", "gpu-test"}, {"sh", "-c", "nvidia-smi"}}, c.Host.Checks)
	assert.Equal(t, []string{"make test", "make gpu-test", "sh -c 'nvidia-smi'"}, c.Host.CheckLines)
	assert.Equal(t, [][]string{nil, {"gpu", "linux"}, {"gpu"}}, c.Host.CheckLabels, "sorted, each once")
	assert.Equal(t, "127.0.0.1:0", c.Host.Serve)
	assert.Empty(t, c.Host.ServeURL)
}

func TestWorkerDefaultsAndKeys(t *testing.T) {
	c, err := Load(writeConfig(t, minimal), nil, nil)
	require.NoError(t, err)
	assert.Empty(t, c.Worker.Labels)
	assert.Equal(t, 1, c.Worker.Parallel)
	assert.ErrorContains(t, c.RequireWorker(), "cluster.nats: not set: a worker takes its jobs from the hosts through NATS")

	path := writeConfig(t, minimal+"cluster:\n  nats: nats://127.0.0.1:4222\nworker:\n  labels: [linux, gpu]\n  work: w\n  parallel: 3\nhost:\n  serve: 0.0.0.0:7070\n  serve_url: http://build1:7070/\n")
	c, err = Load(path, nil, nil)
	require.NoError(t, err)
	assert.NoError(t, c.RequireWorker())
	assert.Equal(t, []string{"gpu", "linux"}, c.Worker.Labels)
	assert.Equal(t, filepath.Join(filepath.Dir(path), "w"), c.Worker.Work, "relative to the file")
	assert.Equal(t, 3, c.Worker.Parallel)
	assert.Equal(t, "0.0.0.0:7070", c.Host.Serve)
	assert.Equal(t, "http://build1:7070", c.Host.ServeURL)

	t.Setenv("FOREMAN_WORKER_LABELS", "arm64 linux")
	c, err = Load(writeConfig(t, minimal), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"arm64", "linux"}, c.Worker.Labels, "a variable is a list of words")
}

func TestWorkerAndLabelErrorsNameTheKey(t *testing.T) {
	for name, tc := range map[string]struct{ yaml, want string }{
		"label case":     {"worker:\n  labels: [GPU]\n", `worker.labels: "GPU" is not a label: 1 to 32 lower-case letters, digits, _ or -`},
		"label reserved": {"worker:\n  labels: [sandboxed]\n", `worker.labels: "sandboxed" is foreman's own label`},
		"parallel":       {"worker:\n  parallel: 0\n", "worker.parallel: 0 is below the least allowed, 1"},
		"parallel many":  {"worker:\n  parallel: 65\n", "worker.parallel: 65 is over the most allowed, 64"},
		"worker unknown": {"worker:\n  label: [gpu]\n", "worker.label: unknown key (did you mean worker.labels?)"},
		"check no run":   {"host:\n  checks:\n    - {labels: [gpu]}\n", "host.checks[0]: has no run"},
		"check key":      {"host:\n  checks:\n    - make test\n    - {run: make, label: [gpu]}\n", "host.checks[1].label: unknown key (a check is written as a string, or as run and labels)"},
		"check label":    {"host:\n  checks:\n    - {run: make, labels: [\"a b!\"]}\n", `host.checks[0].labels: "a b!" is not a label`},
		"check shell":    {"host:\n  checks:\n    - {run: \"make && make test\", labels: [gpu]}\n", "host.checks[0]: \"make && make test\" has && outside quotes"},
		"check not text": {"host:\n  checks:\n    - [make, test]\n", "host.checks[0]: is not a check like \"make test\", nor a mapping with run and labels"},
		"check run list": {"host:\n  checks:\n    - {run: [make]}\n", "host.checks[0].run: is not a check like \"make test\""},
		"serve":          {"host:\n  serve: nowhere\n", `host.serve: "nowhere" is not an address like 127.0.0.1:7070`},
		"serve url":      {"host:\n  serve_url: ftp://x\n", `host.serve_url: "ftp://x" is not an http:// or https:// URL`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(writeConfig(t, minimal+tc.yaml), nil, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

package main

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentforeman/foreman/internal/config"
)

// A warning shared by many builds of a pool is said once, naming a few.
func TestPoolWarningsSayEachOnce(t *testing.T) {
	var builds []*config.Config
	for i := range 5 {
		builds = append(builds, &config.Config{File: fmt.Sprintf("b%d.yaml", i)})
	}
	of := func(c *config.Config) []string {
		if c.File == "b3.yaml" {
			return []string{"shared", "own"}
		}
		return []string{"shared"}
	}
	assert.Equal(t, []string{"b0.yaml, b1.yaml and 3 more: shared", "b3.yaml: own"}, poolWarnings(builds, of))
	assert.Equal(t, []string{"b0.yaml, b1.yaml, b2.yaml: shared"}, poolWarnings(builds[:3], func(*config.Config) []string { return []string{"shared"} }))
}

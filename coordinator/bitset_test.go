package coordinator

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBitset(t *testing.T) {
	var b bitset
	for _, i := range []int{130, 0, 63, 64, 5} {
		b.set(i, true)
	}
	b.set(5, false)
	b.set(1000, false) // clearing beyond the end grows nothing it needs
	assert.Equal(t, []int{0, 63, 64, 130}, slices.Collect(b.all()))
	assert.True(t, b.has(64))
	assert.False(t, b.has(5))
	assert.False(t, b.has(100000))
}

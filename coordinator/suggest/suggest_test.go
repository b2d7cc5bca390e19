package suggest

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestClosest(t *testing.T) {
	names := []string{"api", "auth", "db", "web-ui", "notifications"}
	assert.Equal(t, "api", Closest("apj", names))
	assert.Equal(t, "api", Closest("API", names))
	assert.Equal(t, "db", Closest("dbb", names))
	assert.Equal(t, "web-ui", Closest("webui", names))
	assert.Equal(t, "notifications", Closest("notifcations", names))
	assert.Equal(t, "", Closest("payments", names))
	assert.Equal(t, "", Closest("api", names), "the word itself is no suggestion")
	assert.Equal(t, "", Closest("x", nil))
}

func TestDistance(t *testing.T) {
	assert.Equal(t, 0, distance("abc", "abc", 2))
	assert.Equal(t, 1, distance("abc", "abd", 2))
	assert.Equal(t, 2, distance("abc", "ba", 2))
	assert.Equal(t, 3, distance("abcdef", "a", 2), "beyond the limit reads as limit+1")
	assert.Equal(t, 2, distance("", "ab", 2))
}

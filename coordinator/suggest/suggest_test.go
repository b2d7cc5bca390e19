package suggest

import (
	"fmt"
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

// The index answers as Closest does on a small build, and on a huge one
// still finds near names while comparing with at most MaxScan of them.
func TestIndex(t *testing.T) {
	small := NewIndex()
	for _, n := range []string{"api", "auth", "db", "web-ui", "notifications"} {
		small.Add(n)
	}
	assert.Equal(t, "api", small.Closest("apj"))
	assert.Equal(t, "web-ui", small.Closest("webui"))
	assert.Equal(t, "", small.Closest("zzzzzz"))

	huge := NewIndex()
	for i := range 100000 {
		huge.Add(fmt.Sprintf("svc-%06d", i))
	}
	huge.Add("payments")
	assert.Equal(t, "payments", huge.Closest("paymnets"))
	assert.Equal(t, "payments", huge.Closest("PAYMENTS"))
	assert.Equal(t, "svc-000001", huge.Closest("svc-00001"), "a near length is searched")
}

func BenchmarkIndexUnknown(b *testing.B) {
	x := NewIndex()
	for i := range 100000 {
		x.Add(fmt.Sprintf("c%d", i))
	}
	for b.Loop() {
		x.Closest("zz9999")
	}
}

func BenchmarkClosestUnbounded(b *testing.B) {
	var names []string
	for i := range 100000 {
		names = append(names, fmt.Sprintf("c%d", i))
	}
	for b.Loop() {
		Closest("zz9999", names)
	}
}

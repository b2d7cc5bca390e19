package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestFloorClaimsExpire(t *testing.T) {
	f := floor{}
	key := floorKey{"#build", "m"}
	t0 := time.Unix(1000, 0)
	granted, _ := f.claim(key, floorClaim{agent: "@b", started: 2000}, t0)
	assert.True(t, granted)
	granted, other := f.claim(key, floorClaim{agent: "@c", started: 3000}, t0.Add(floorTTL-time.Millisecond))
	assert.False(t, granted)
	assert.Equal(t, "@b", other.agent)
	// The holder said nothing for floorTTL: the floor is free again.
	granted, other = f.claim(key, floorClaim{agent: "@c", started: 3000}, t0.Add(floorTTL))
	assert.True(t, granted)
	assert.Nil(t, other)
}

func TestFloorRelease(t *testing.T) {
	f := floor{}
	t0 := time.Unix(1000, 0)
	f.claim(floorKey{"#a", "1"}, floorClaim{agent: "@x", started: 1}, t0)
	f.claim(floorKey{"#b", "2"}, floorClaim{agent: "@x", started: 1}, t0)
	f.claim(floorKey{"#b", "3"}, floorClaim{agent: "@y", started: 1}, t0)
	f.release("@x", "#a")
	assert.Len(t, f, 2)
	f.release("@x", "")
	assert.Equal(t, floor{floorKey{"#b", "3"}: f[floorKey{"#b", "3"}]}, f)
}

// Every type the checks know has a handler, and the other way round.
func TestEveryCheckedFrameHasAHandler(t *testing.T) {
	for typ := range rules {
		assert.Contains(t, handlers, typ)
	}
	for typ := range handlers {
		assert.Contains(t, rules, typ)
	}
}

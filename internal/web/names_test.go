package web

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNamedKeepsCleanBoundedNames(t *testing.T) {
	s := New(Options{})
	s.Named("@b1", "alice")
	s.Named("@b2", "  bob\x1b[2J\nsmith  ")
	s.Named("@b3", strings.Repeat("z", 500))
	s.Named("", "nobody")
	s.Named("@b4", "   ")
	s.Named(strings.Repeat("@", maxIDLen+1), "too long an id")

	b := s.wholeBoard(context.Background())
	require.Len(t, b.Names, 3)
	assert.Equal(t, "alice", b.Names["@b1"])
	assert.NotContains(t, b.Names["@b2"], "\n")
	assert.NotContains(t, b.Names["@b2"], "\x1b")
	assert.True(t, strings.HasPrefix(b.Names["@b2"], "bob"))
	assert.LessOrEqual(t, len(b.Names["@b3"]), maxNameLen)

	s.Named("@b1", "alicia")
	assert.Equal(t, "alicia", s.wholeBoard(context.Background()).Names["@b1"], "a new name replaces the old")
}

func TestNamedIsBounded(t *testing.T) {
	var n nameBook
	for i := range maxNames + 10 {
		n.set(fmt.Sprintf("@a%d", i), "x")
	}
	all, _ := n.since(0)
	assert.Len(t, all, maxNames)
	assert.True(t, n.set("@a0", "renamed"), "a known id may still be renamed")
}

func TestNamesReachLiveViewersOnce(t *testing.T) {
	src := &fakeSource{view: shopView(), health: healthy()}
	s := New(Options{Refresh: time.Hour})
	s.Attach(src)
	s.Named("@b1", "alice")
	ts := newTestServer(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := openStream(t, ctx, ts.URL)
	assert.Equal(t, map[string]string{"@b1": "alice"}, stream.next().Names)
	views := src.views.Load()

	s.Named("@b1", "alice") // the same again: nothing to tell
	s.Named("@b2", "bob")
	b := stream.next()
	assert.True(t, b.Update)
	assert.Equal(t, map[string]string{"@b2": "bob"}, b.Names, "only the new name")
	assert.Empty(t, b.Changed)
	assert.Equal(t, views, src.views.Load(), "a name is no reason to ask the bot for its view")
}

func TestNamedFromManyGoroutines(t *testing.T) {
	s := New(Options{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				s.Named(fmt.Sprintf("@g%d-%d", g, i), "n")
			}
		})
	}
	wg.Wait()
	assert.Len(t, s.wholeBoard(context.Background()).Names, 800)
}

package web

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/protocol"
)

func TestAPIView(t *testing.T) {
	src := &fakeSource{view: shopView(), health: healthy()}
	s := New(Options{Now: func() time.Time { return t0.Add(time.Minute) }})
	ts := newTestServer(t, s)

	var b Board
	require.Equal(t, http.StatusServiceUnavailable, getJSON(t, ts.URL+"/api/view", &b), "nothing attached yet")
	assert.Nil(t, b.View)
	assert.Equal(t, "foreman is starting", b.Problem)

	s.Attach(src)
	s.Observe(heard(t0, "@b3", "ABORT web missing_dependency: no schema"), said(t0, protocol.Escalate("web", protocol.HardBlocker, "missing_dependency: no schema", "RESOLVE web")))
	s.Observe(tick(t0), said(t0, protocol.Escalate(protocol.BuildSubject, protocol.Overtime, "the build is past 2h", "")))

	b = Board{}
	require.Equal(t, http.StatusOK, getJSON(t, ts.URL+"/api/view", &b))
	require.NotNil(t, b.View)
	assert.Equal(t, "shop", b.View.Build)
	assert.Equal(t, t0.Add(time.Minute), b.Now)
	require.Len(t, b.View.Components, 4)
	assert.Equal(t, "held", b.View.Components[2].State)
	assert.True(t, b.Health.Healthy)
	assert.True(t, b.Full)

	require.NotNil(t, b.Layout)
	assert.Len(t, b.Layout.Nodes, 4)
	assert.Equal(t, 4, b.Layout.Columns, "a chain of four")

	assert.Equal(t, map[string]Escalation{
		"web": {Code: "hard-blocker", Text: "missing_dependency: no schema; RESOLVE web", At: t0},
	}, b.Escalations, "the overtime is not open: the view says it was never said")

	require.Len(t, b.Log, 3)
	assert.Equal(t, Entry{Seq: 1, At: t0, From: "@b3", Text: "ABORT web missing_dependency: no schema"}, b.Log[0])
	assert.True(t, b.Log[1].Said)
	assert.Equal(t, uint64(3), b.LogSeq)

	// Once resolved, the escalation leaves the board.
	src.set(func(f *fakeSource) { f.view.Components[2].State, f.view.Components[2].Escalation = "building", "" })
	b = Board{}
	require.Equal(t, http.StatusOK, getJSON(t, ts.URL+"/api/view", &b))
	assert.Empty(t, b.Escalations)
}

// TestBuildEscalationIsOpenUnderBuild: a build-level ESCALATE has the
// subject "build", never the build's name, and is open while the view
// says the build is still so.
func TestBuildEscalationIsOpenUnderBuild(t *testing.T) {
	src := &fakeSource{view: shopView(), health: healthy()}
	src.view.Overtime = true
	s := New(Options{})
	s.Attach(src)
	s.Observe(tick(t0), said(t0, protocol.Escalate(protocol.BuildSubject, protocol.Overtime, "the build is past 2h", "STATUS")))
	ts := newTestServer(t, s)

	var b Board
	require.Equal(t, http.StatusOK, getJSON(t, ts.URL+"/api/view", &b))
	assert.Equal(t, Escalation{Code: "overtime", Text: "the build is past 2h; STATUS", At: t0}, b.Escalations[protocol.BuildSubject])
	assert.NotContains(t, b.Escalations, "shop", "not under the build's name")

	src.set(func(f *fakeSource) { f.view.Overtime = false })
	b = Board{}
	require.Equal(t, http.StatusOK, getJSON(t, ts.URL+"/api/view", &b))
	assert.NotContains(t, b.Escalations, protocol.BuildSubject, "no longer open")
}

func TestAPIViewWhenTheBotDoesNotAnswer(t *testing.T) {
	src := &fakeSource{viewErr: assert.AnError, health: healthy()}
	s := New(Options{})
	s.Attach(src)
	ts := newTestServer(t, s)
	var b Board
	require.Equal(t, http.StatusServiceUnavailable, getJSON(t, ts.URL+"/api/view", &b))
	assert.Contains(t, b.Problem, "did not answer")
	assert.Nil(t, b.View)

	// Once it has answered, its last board is shown, marked stale.
	src.set(func(f *fakeSource) { f.viewErr, f.view = nil, shopView() })
	b = Board{}
	require.Equal(t, http.StatusOK, getJSON(t, ts.URL+"/api/view", &b))
	assert.False(t, b.Stale)
	src.set(func(f *fakeSource) { f.viewErr, f.view.Build = assert.AnError, "changed" })
	b = Board{}
	require.Equal(t, http.StatusServiceUnavailable, getJSON(t, ts.URL+"/api/view", &b))
	require.NotNil(t, b.View)
	assert.True(t, b.Stale)
	assert.Equal(t, "shop", b.View.Build)
	assert.Contains(t, b.Problem, "last board")
}

func TestRoomLogKeepsTheLatest(t *testing.T) {
	l := newRoomLog(3)
	assert.Empty(t, l.since(0))
	for i := range 5 {
		l.add(t0, "@a", false, strings.Repeat("x", i+1))
	}
	got := l.since(0)
	require.Len(t, got, 3)
	assert.Equal(t, []uint64{3, 4, 5}, []uint64{got[0].Seq, got[1].Seq, got[2].Seq})
	assert.Equal(t, "xxx", got[0].Text)
	assert.Len(t, l.since(4), 1)
	assert.Empty(t, l.since(5))

	l.add(t0, "@a", false, strings.Repeat("y", 2000)+"\x1b[2J")
	assert.LessOrEqual(t, len(l.since(5)[0].Text), maxEntryText, "one long line is cut")
}

// TestRoomLogLeavesOutStamps: the stamp that ends a stamping sender's
// message is not a line of the room's.
func TestRoomLogLeavesOutStamps(t *testing.T) {
	s := New(Options{})
	stamp := agentchat.Stamp{Tag: "foreman shop/7f3a9c", Seqs: []agentchat.SeqRange{{From: 12, To: 14}}}
	s.Observe(heard(t0, "@other", "STATUS\nhello\n"+stamp.String()), nil)
	s.Observe(heard(t0, "@b1", "PROGRESS db 10 [not a stamp]"), nil)
	s.mu.Lock()
	defer s.mu.Unlock()
	var texts []string
	for _, e := range s.log.since(0) {
		texts = append(texts, e.Text)
	}
	assert.Equal(t, []string{"STATUS", "hello", "PROGRESS db 10 [not a stamp]"}, texts)
}

func TestPageAndAssets(t *testing.T) {
	ts := newTestServer(t, New(Options{}))
	code, h, body := get(t, ts.URL+"/")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "text/html; charset=utf-8", h.Get("Content-Type"))
	assert.Contains(t, h.Get("Content-Security-Policy"), "script-src 'self'")
	page := string(body)
	assert.Contains(t, page, `<html lang="en">`)
	assert.Contains(t, page, `src="assets/board.js"`)
	assert.NotContains(t, page, "http://", "nothing is fetched from elsewhere")
	assert.NotContains(t, page, "https://")

	for path, typ := range map[string]string{"/assets/board.js": "javascript", "/assets/board.css": "text/css"} {
		code, h, body := get(t, ts.URL+path)
		require.Equal(t, http.StatusOK, code, path)
		assert.Contains(t, h.Get("Content-Type"), typ, path)
		assert.NotContains(t, string(body), "https://", path)
	}
	code, _, _ = get(t, ts.URL+"/assets/")
	assert.Equal(t, http.StatusNotFound, code)
	code, _, _ = get(t, ts.URL+"/nothing")
	assert.Equal(t, http.StatusNotFound, code)
}

// TestPageCarriesTheBoard: the page is served with the board as it is now
// inside it (so the first paint shows the build, issue 48), as a JSON data
// block that text from the room cannot end or turn into a script.
func TestPageCarriesTheBoard(t *testing.T) {
	src := &fakeSource{view: shopView(), health: healthy()}
	s := New(Options{})
	s.Attach(src)
	attack := `</script><script>alert(1)</script><!--`
	s.Observe(heard(t0, "@b1", "PROGRESS api 40 "+attack), nil)
	ts := newTestServer(t, s)
	code, h, body := get(t, ts.URL+"/")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "no-store", h.Get("Cache-Control"), "a page that carries the board is never reused")
	page := string(body)
	assert.NotContains(t, page, "<script>alert", "text from the room stays text")
	assert.Equal(t, 1, strings.Count(page, "</script>")-strings.Count(page, "<script src="), "one data block, ended once")

	const open = `<script id="board-data" type="application/json">`
	_, data, ok := strings.Cut(page, open)
	require.True(t, ok, "the page carries the board")
	data, _, ok = strings.Cut(data, "</script>")
	require.True(t, ok)
	var b Board
	require.NoError(t, json.Unmarshal([]byte(data), &b))
	require.NotNil(t, b.View)
	assert.Equal(t, "shop", b.View.Build)
	assert.Len(t, b.View.Components, 4)
	require.NotNil(t, b.Layout, "laid out, to draw at once")
	assert.True(t, b.Full)
	require.NotEmpty(t, b.Log)
	assert.Equal(t, "PROGRESS api 40 "+attack, b.Log[len(b.Log)-1].Text, "the line itself, as the room said it")
	assert.Less(t, strings.Index(page, open), strings.Index(page, `src="assets/board.js"`), "before the script that draws it")
}

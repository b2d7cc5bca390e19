package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func getCI(t *testing.T, h http.Handler, path string) (int, string, http.Header) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, err := io.ReadAll(rec.Result().Body)
	require.NoError(t, err)
	return rec.Code, string(body), rec.Result().Header
}

func TestBoardServesTheHostsQueueAndLogs(t *testing.T) {
	code, body, _ := getCI(t, New(Options{}).Handler(), "/ci/queue")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"absent"`, "no host: said, not an error")

	dir := t.TempDir()
	h := New(Options{HostLogs: dir}).Handler()
	_, body, _ = getCI(t, h, "/ci/queue")
	assert.Contains(t, body, "no foreman host has written its queue")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "queue.json"), []byte(`{"max_parallel":2}`), 0o644))
	_, body, hdr := getCI(t, h, "/ci/queue")
	assert.Equal(t, `{"max_parallel":2}`, body)
	assert.Equal(t, "application/json", hdr.Get("Content-Type"))

	require.NoError(t, os.WriteFile(filepath.Join(dir, "api-3.log"), []byte("$ make test\n<script>x</script>\n"), 0o644))
	code, body, hdr = getCI(t, h, "/ci/logs/api-3.log")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "$ make test\n<script>x</script>\n", body)
	assert.Equal(t, "text/plain; charset=utf-8", hdr.Get("Content-Type"), "a log is text, never a page")
	assert.Equal(t, "nosniff", hdr.Get("X-Content-Type-Options"))
	for _, bad := range []string{"/ci/logs/queue.json", "/ci/logs/..%2fsecret.log", "/ci/logs/.hidden.log", "/ci/logs/nope.log"} {
		code, _, _ := getCI(t, h, bad)
		assert.Equal(t, http.StatusNotFound, code, bad)
	}
}

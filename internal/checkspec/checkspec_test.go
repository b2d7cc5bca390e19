package checkspec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSplit(t *testing.T) {
	for in, want := range map[string][]string{
		"make test":                    {"make", "test"},
		"  go   test ./...  ":          {"go", "test", "./..."},
		`sh -c 'go vet ./... && make'`: {"sh", "-c", "go vet ./... && make"},
		`echo "a b" c`:                 {"echo", "a b", "c"},
		`grep -q ''`:                   {"grep", "-q", ""},
	} {
		got, err := Split(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "   ", `echo 'x`, "a\nb"} {
		_, err := Split(bad)
		assert.Error(t, err, "%q", bad)
	}
	assert.NoError(t, CheckEnvEntry("GOFLAGS=-count=1"))
	assert.NoError(t, CheckEnvEntry("HTTP_PROXY"))
	assert.Error(t, CheckEnvEntry("1X=2"))
	assert.Error(t, CheckEnvEntry("A B"))
}

func TestShellOperator(t *testing.T) {
	for in, want := range map[string]string{
		"test -f README && echo ok": "&&",
		"make lint || true":         "||",
		"go test ./... | tee out":   "|",
		"make; make test":           ";",
		"echo hi > out":             ">",
		"wc -l < file":              "<",
		"echo $(date)":              "$(",
		"echo `date`":               "`",
		"sh -c 'make && make test'": "",
		`sh -c "a | b; c > d"`:      "",
		"make test":                 "",
		"go test -run 'A|B' ./...":  "",
		"echo 'it''s' && x":         "&&",
	} {
		assert.Equal(t, want, ShellOperator(in), in)
	}
}

func TestSizes(t *testing.T) {
	for in, want := range map[string]int64{"4GiB": 4 << 30, "512MiB": 512 << 20, "1048576": 1 << 20, "2G": 2 << 30, "10 KB": 10 << 10, "7B": 7} {
		n, err := ParseSize(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, n, in)
	}
	for _, bad := range []string{"", "x", "-1GiB", "1.5GiB", "99999999999TiB"} {
		_, err := ParseSize(bad)
		assert.Error(t, err, bad)
	}
	assert.Equal(t, "4GiB", Size(4<<30))
	assert.Equal(t, "1536MiB", Size(1536<<20))
	assert.Equal(t, "1000", Size(1000))
}

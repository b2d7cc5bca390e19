package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStatusShowsTheHostsQueue(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	writeHostQueue(&out, dir, time.Now())
	assert.Empty(t, out.String(), "no host: nothing")

	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	q := `{"at":"2026-03-01T09:00:00Z","target":"main","max_parallel":2,
	"running":[{"run":7,"kind":"check","c":"api","ref":"b1/api","queued":"2026-03-01T08:59:00Z","started":"2026-03-01T08:59:30Z"}],
	"waiting":[{"run":8,"kind":"check","c":"db","ref":"b2/db","queued":"2026-03-01T08:59:50Z","not_before":"2026-03-01T09:00:20Z","why":"the repository is locked"},
	           {"run":10,"kind":"check","c":"ui","ref":"b5/ui","queued":"2026-03-01T08:59:55Z","why":"waiting for more READYs to be checked with it (host.batch.min 3), until 09:00:55 at the latest"}],
	"train":[{"c":"cart","ref":"b3/cart","on":"main","state":"passed","eta":"2026-03-01T09:00:00Z"},
	         {"c":"pay","ref":"b4/pay","on":"main+cart","state":"checking","run":9,"eta":"2026-03-01T09:02:00Z"}],
	"flaky":{"make test":2,"go vet":1},
	"check_runs":7,"landed_n":2,
	"commands":[{"command":"go vet","failed":3,"passed_again":0,"flaky":false},{"command":"make test","failed":3,"passed_again":2,"flaky":true}],
	"landed":[{"c":"db","commit":"fedcba9876543210fedc","receipt":true,"file":"db-fedcba987654.receipt.json","at":"2026-03-01T08:57:00Z"},
	          {"c":"auth","commit":"aaaabbbbccccddddeeee","receipt":false,"at":"2026-03-01T08:57:30Z"}],
	"recent":[{"at":"2026-03-01T08:58:00Z","run":6,"kind":"check","c":"web","result":"failed","commit":"0123456789abcdef0123","line":"make: FAIL","log":"/l/web-6.log"}]}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "queue.json"), []byte(q), 0o644))
	writeHostQueue(&out, dir, at.Add(3*time.Second))
	assert.Equal(t, `
CI queue (foreman host, target main, max_parallel 2, as of 3s ago):
  running  check api              b1/api for 30s
  waiting  check db               b2/db (1 of 2), retried: the repository is locked
  waiting  check ui               b5/ui (2 of 2), waiting for more READYs to be checked with it (host.batch.min 3), until 09:00:55 at the latest
  train 1  passed   cart             on main, lands in about 0s
  train 2  checking pay              on main+cart, lands in about 2m0s
  flaky checks (failed, then passed on the same tree): go vet 1 make test 2
  checks   7 runs in this host's life, 2 components landed: 3.50 runs per landing
  check    go vet           failed 3, passed again on the same tree 0: blamed when it fails
  check    make test        failed 3, passed again on the same tree 2: flaky: a failure is checked again before anyone is blamed
  merged   db               at fedcba987654  receipt: git notes --ref foreman show fedcba987654
  merged   auth             at aaaabbbbcccc  no receipt of this host's (found on the target already)
  failed   check web              0123456789ab make: FAIL log=/l/web-6.log
`, out.String())
}

package loadtest

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// metrics are the samples of one scrape of the bot's /metrics, keyed by
// the series as written there: a name, with its labels if it has any
// (`foreman_replies_total{verb="ACK"}`).
type metrics map[string]float64

// scrape reads the bot's /metrics. The Prometheus text format is simple
// enough to read by hand for the few counters the report needs.
func scrape(ctx context.Context, base string) (metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s/metrics answered %s", base, resp.Status)
	}
	return parseMetrics(resp.Body)
}

func parseMetrics(r io.Reader) (metrics, error) {
	m := metrics{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		// A label value may hold spaces, so the value is what follows the
		// last one (an optional timestamp is not written by the bot).
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		m[line[:i]] = v
	}
	return m, sc.Err()
}

// get returns a sample, 0 when absent (a counter never incremented).
func (m metrics) get(series string) float64 { return m[series] }

// Bucket is one bucket of a histogram: the share of observations at or
// below LE.
type Bucket struct {
	LEMicros float64 `json:"le_us"`
	Share    float64 `json:"share"`
}

// histogramDelta reads histogram name's buckets as they grew from m0 to
// m1, as cumulative shares; nil when nothing was observed in between.
func histogramDelta(m0, m1 metrics, name string) []Bucket {
	prefix := name + `_bucket{le="`
	total := m1.get(name+"_count") - m0.get(name+"_count")
	if total <= 0 {
		return nil
	}
	var out []Bucket
	for series, v := range m1 {
		le, ok := strings.CutPrefix(series, prefix)
		if !ok {
			continue
		}
		bound, err := strconv.ParseFloat(strings.TrimSuffix(le, `"}`), 64)
		if err != nil || math.IsInf(bound, 0) {
			continue // +Inf holds everything by definition
		}
		out = append(out, Bucket{LEMicros: bound * 1e6, Share: (v - m0.get(series)) / total})
	}
	slices.SortFunc(out, func(a, b Bucket) int { return cmp.Compare(a.LEMicros, b.LEMicros) })
	return out
}

package transcript

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// benchTranscript is a build of n components, each claimed, heartbeaten
// beats times, made ready, audited and merged, with every coordinator line
// expected.
func benchTranscript(n, beats int) string {
	var b strings.Builder
	b.WriteString("!build bench\n!role auditor @aud\n!set max_build_time=0\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "!component c%d\n", i)
	}
	var all []string
	for i := 0; i < n; i++ {
		all = append(all, fmt.Sprintf("c%d", i))
	}
	at := time.Duration(0)
	line := func(sender, text string) {
		fmt.Fprintf(&b, "%s %s %s\n", FormatTime(at), sender, text)
	}
	line("@foreman", "TASKS "+strings.Join(all, " "))
	for i := 0; i < n; i++ {
		at += time.Second
		c, agent := fmt.Sprintf("c%d", i), fmt.Sprintf("@b%d", i%50)
		line(agent, "CLAIM "+c)
		line("@foreman", "ACK "+c+" "+agent)
		for k := 0; k < beats; k++ {
			line(agent, fmt.Sprintf("PROGRESS %s %d", c, (k+1)*100/(beats+1)))
		}
		line(agent, "READY "+c+" pr/"+c)
		line("@foreman", "REVIEW "+c+" "+agent+" pr/"+c)
		line("@aud", "AUDIT "+c+" PASS")
		line("@foreman", "MERGED "+c)
	}
	line("@foreman", "COMPLETE bench")
	return b.String()
}

// BenchmarkReplay replays a 200-component build of 2,400 lines (parse the
// file, then read and step every line on the virtual clock, then compare).
func BenchmarkReplay(b *testing.B) {
	text := benchTranscript(200, 6)
	lines := strings.Count(text, "\n")
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		t, err := Parse("bench.txt", strings.NewReader(text))
		if err != nil {
			b.Fatal(err)
		}
		res, err := Replay(t)
		if err != nil || !res.Passed() {
			b.Fatalf("replay failed: %v", err)
		}
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

func TestBenchTranscriptReplays(t *testing.T) {
	tr, err := Parse("bench.txt", strings.NewReader(benchTranscript(20, 3)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Replay(tr)
	if err != nil || !res.Passed() {
		var d strings.Builder
		res.WriteDiff(&d)
		t.Fatalf("%v\n%s", err, d.String())
	}
}

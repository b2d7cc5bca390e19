package host

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkCoreReadyToVerdict is the core's own share of a READY: the
// owner's READY read and queued, the job started, its outcome turned into
// CI c PASS. (The git work is BenchmarkReadyToVerdict in gitjob.)
func BenchmarkCoreReadyToVerdict(b *testing.B) {
	h := New(Config{Self: "@host", Coordinator: "@foreman", Gating: true, External: true, MaxParallel: 4}, State{})
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("c%03d", i)
		h.Heard(t0, "@foreman", true, "ACK "+names[i]+" @b")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		c := names[i%len(names)]
		a := h.Heard(t0, "@b", true, "READY "+c+" b/"+c)
		if len(a.Start) != 1 {
			b.Fatalf("%+v", a)
		}
		a = h.Finished(t0.Add(time.Duration(i)), Outcome{Run: a.Start[0].Run, Result: Passed, Commit: "c0ffee"})
		if len(a.Say) != 1 {
			b.Fatalf("%+v", a)
		}
		h.Heard(t0, "@foreman", true, "FIX "+c+" @b 1/5 again")
	}
}

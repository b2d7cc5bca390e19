package vopr

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

func TestDebugSeeds(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("VOPR_N"))
	from, _ := strconv.Atoi(os.Getenv("VOPR_FROM"))
	if n == 0 {
		t.Skip()
	}
	verbose := os.Getenv("VOPR_V") != ""
	bad := 0
	for s := from; s < from+n; s++ {
		opts := Options{Seed: uint64(s)}
		if verbose {
			opts.Trace = func(step int, at time.Duration, what string) { fmt.Printf("%6d %12s %s\n", step, at, what) }
		}
		began := time.Now()
		r := Run(opts)
		if r.Violation != nil || verbose {
			fmt.Printf("seed %d: steps %d virtual %s took %s complete %v limit %q\n", s, r.Steps, r.Virtual, time.Since(began), r.Complete, r.Limit)
		}
		if r.Violation != nil {
			bad++
			fmt.Println("  ", r.Violation)
		}
	}
	fmt.Println("bad", bad, "of", n)
}

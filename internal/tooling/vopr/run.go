package vopr

import (
	"runtime"
	"sort"
	"sync"
	"time"
)

// Summary adds up many runs.
type Summary struct {
	Seeds      int
	Steps      int64
	Virtual    time.Duration
	Complete   int // builds that ended COMPLETE
	Held       int // builds that ended with every unfinished component held for a human
	Limits     int // runs stopped at a documented limit
	Faults     Faults
	Violations []*Violation // in seed order
}

// Add counts one run.
func (s *Summary) Add(r Result) {
	s.Seeds++
	s.Steps += int64(r.Steps)
	s.Virtual += r.Virtual
	s.Faults.Add(r.Faults)
	switch {
	case r.Violation != nil:
		s.Violations = append(s.Violations, r.Violation)
	case r.Limit != "":
		s.Limits++
	case r.Complete:
		s.Complete++
	default:
		s.Held++
	}
}

// RunMany runs seeds from, from+1, ..., n of them, on workers goroutines
// (0: one per CPU). Each run is alone on its goroutine and depends on its
// seed only, so the results are the same however many workers share them.
// each, if set, is called with every result, from one goroutine at a time,
// in no set order.
func RunMany(from uint64, n int, workers int, each func(Result)) Summary {
	return RunManyWith(Options{}, from, n, workers, each)
}

// RunManyWith is RunMany with the options of every run but its seed.
func RunManyWith(opts Options, from uint64, n int, workers int, each func(Result)) Summary {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	seeds := make(chan uint64)
	results := make(chan Result)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range seeds {
				o := opts
				o.Seed = s
				results <- Run(o)
			}
		}()
	}
	go func() {
		for i := range n {
			seeds <- from + uint64(i)
		}
		close(seeds)
		wg.Wait()
		close(results)
	}()
	var sum Summary
	for r := range results {
		sum.Add(r)
		if each != nil {
			each(r)
		}
	}
	sort.Slice(sum.Violations, func(i, j int) bool { return sum.Violations[i].Seed < sum.Violations[j].Seed })
	return sum
}

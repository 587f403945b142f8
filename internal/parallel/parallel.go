// Package parallel runs a batch of independent API writes on a bounded
// number of workers: under load each write takes a good part of a second,
// and a controller that writes thousands of them one by one stalls for
// minutes.
package parallel

import "sync"

// Do runs fn(0..n-1) on at most workers goroutines (at least one) and waits
// for all of them.
func Do(n, workers int, fn func(i int)) {
	sem := make(chan struct{}, max(workers, 1))
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			fn(i)
		}(i)
	}
	wg.Wait()
}

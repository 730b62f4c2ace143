// goprofile.go -- built by tests/e2e/test_static.py with a plain `go build` (static): CPU
// profiling on (to /dev/null), so the runtime has a POSIX timer per thread (timer_create with
// SIGEV_THREAD_ID, Go 1.16 and later) and an ITIMER_PROF, while four goroutines hash N rounds.
package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
)

func main() {
	n, _ := strconv.Atoi(os.Args[1])
	f, _ := os.Create(os.DevNull)
	pprof.StartCPUProfile(f)
	var wg sync.WaitGroup
	res := make([]uint64, 4)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			h := uint64(1469598103934665603)
			for i := 0; i < n; i++ {
				h ^= uint64(i * (w + 1))
				h *= 1099511628211
			}
			res[w] = h
		}(w)
	}
	wg.Wait()
	pprof.StopCPUProfile()
	fmt.Println(res)
}

// gopipeline.go -- built by tests/e2e/test_static.py with a plain `go build`: no cgo package is
// imported, so the binary is statically linked, as Go builds by default.  Goroutines joined by
// channels, garbage for the collector, a map.  Deterministic output.
package main

import (
	"fmt"
	"hash/fnv"
	"os"
	"runtime"
	"strconv"
	"sync"
)

// pipeline: producers -> squarers -> a summing stage, with a map that churns the heap.
func pipeline(n int) {
	src := make(chan int, 64)
	sq := make(chan uint64, 64)
	go func() {
		for i := 0; i < n; i++ {
			src <- i
		}
		close(src)
	}()
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range src {
				h := fnv.New64a()
				b := make([]byte, 64+i%512) // garbage for the collector
				for k := range b {
					b[k] = byte(i + k)
				}
				h.Write(b)
				sq <- h.Sum64() % 1000003
			}
		}()
	}
	go func() { wg.Wait(); close(sq) }()
	m := map[uint64]int{}
	var sum uint64
	count := 0
	for v := range sq {
		m[v%4099]++
		sum += v
		count++
		if count%200000 == 0 {
			fmt.Println("step", count, len(m))
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Println("pipeline", count, sum, len(m), ms.NumGC > 0)
}

func main() {
	n, _ := strconv.Atoi(os.Args[1])
	pipeline(n)
}

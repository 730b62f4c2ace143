// gohttp.go -- built by tests/e2e/test_static.py with `go build` and CGO_ENABLED=0 (net would
// link libc through cgo otherwise): a statically linked Go program with an HTTP server of its own,
// queried by its own client over a new connection per request; `N mptcp`: its listener an MPTCP
// one.  Deterministic output.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
)

// serve: an HTTP server on a port of its own, queried by its own client over new connections.
func serve(n int, mptcp bool) {
	var lc net.ListenConfig
	lc.SetMultipathTCP(mptcp) // a listener of the kernel's MPTCP, as Go offers it
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	h := uint64(0)
	var mu sync.Mutex
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		h = (h*31 + 7) % 1000003
		v := h
		mu.Unlock()
		io.WriteString(w, strconv.FormatUint(v, 10))
	}))
	url := "http://" + ln.Addr().String() + "/"
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	sum := uint64(0)
	for i := 0; i < n; i++ {
		resp, err := client.Get(url)
		if err != nil {
			fmt.Fprintln(os.Stderr, "get:", err)
			os.Exit(1)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		v, _ := strconv.ParseUint(string(body), 10, 64)
		sum += v
		if (i+1)%500 == 0 {
			fmt.Println("served", i+1, sum)
		}
	}
	fmt.Println("done", sum)
}

func main() {
	n, _ := strconv.Atoi(os.Args[1])
	serve(n, len(os.Args) > 2 && os.Args[2] == "mptcp")
}

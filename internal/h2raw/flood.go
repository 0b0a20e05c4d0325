package h2raw

import (
	"runtime"
	"testing"
	"time"
)

// Usage is what a server holds at an instant: its goroutines and its memory
// in bytes (live heap and stacks in process, RSS of another process; -1 when
// it cannot tell, as under the race detector, whose shadow memory grows
// with the program's).
type Usage struct {
	Goroutines int
	Bytes      int64
}

// InProcess is the usage of this process, for a server in it: its
// goroutines, and its live heap and stacks after a collection (the raw
// client's are counted too).
func InProcess() Usage {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return Usage{Goroutines: runtime.NumGoroutine(), Bytes: int64(m.HeapAlloc + m.StackInuse)}
}

// Flood checks that a gRPC server on a TCP listener that needs token
// allocates nothing for callers without it (issue 23, item 3): on network,
// addr, it sends
//
//   - 20,000 HEADERS-only streams of method without the token on one
//     connection: the first is answered UNAUTHENTICATED and the connection
//     sent GOAWAY;
//   - one stream with the token (HEADERS only, so that it holds the server
//     until the connection closes), then 20,000 without on one connection:
//     each answered UNAUTHENTICATED;
//   - 1,000 connections that send one stream without the token, closed at
//     the GOAWAY, and 1,000 that send none, kept open;
//
// and fails t unless, with those 1,002 connections open, the server's
// goroutines grew by at most 2 per connection and its memory by at most
// 20 MB. usage reads the server's figures; it is called at the start and at
// the end.
func Flood(t testing.TB, network, addr, method, token string, usage func() Usage) {
	t.Helper()
	u0 := usage()
	c, err := Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, err := c.Streams(20000, GRPC(method), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if a.Ended != 1 || a.Status != "16" || !a.GoAway {
		t.Fatalf("20000 streams without the token: %+v, want the first answered UNAUTHENTICATED (16) and GOAWAY", a)
	}

	c2, err := Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Headers(false, GRPC(method, "authorization", "Bearer "+token)); err != nil {
		t.Fatal(err)
	}
	a, err = c2.Streams(20000, GRPC(method), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if a.Closed || a.GoAway || a.Ended != 20000 || a.Status != "16" {
		t.Fatalf("20000 streams without the token after one with it: %+v, want each answered UNAUTHENTICATED (16)", a)
	}

	const conns = 1000
	for i := range 2 * conns {
		c, err := Dial(network, addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		if i < conns {
			a, err := c.Streams(1, GRPC(method), time.Minute)
			c.Close()
			if err != nil || !a.GoAway || a.Status != "16" {
				t.Fatalf("connection %d: %+v, %v; want UNAUTHENTICATED and GOAWAY", i, a, err)
			}
			continue
		}
		defer c.Close()
		if err := c.ReadServerPreface(); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	u := usage()
	grew, mem := u.Goroutines-u0.Goroutines, float64(u.Bytes-u0.Bytes)/1e6
	t.Logf("with %d connections open after 40,000 streams and 1,000 connections without the token: %d goroutines more (%d → %d), %.1f MB more (%.1f → %.1f)",
		conns+2, grew, u0.Goroutines, u.Goroutines, mem, float64(u0.Bytes)/1e6, float64(u.Bytes)/1e6)
	if grew > 2*(conns+2) {
		t.Errorf("%d goroutines more with %d connections open, want at most 2 each", grew, conns+2)
	}
	if mem > 20 && u0.Bytes >= 0 {
		t.Errorf("%.1f MB more with %d connections open, want at most 20", mem, conns+2)
	}
}

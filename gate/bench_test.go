package gate

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
)

// benchGate builds a gate on the real clock (the hot path's production clock)
// with a limit no benchmark reaches.
func benchGate(b *testing.B, toml string) *Gate {
	b.Helper()
	g, err := New(Params{Config: config(b, toml), Resources: NoResources})
	if err != nil {
		b.Fatal(err)
	}
	return g
}

const benchPlain = `
[[group]]
name = "api"
  [group.concurrency]
  law = "fixed"
  limit = 1000000
`

// BenchmarkEnterDone is the admitted path: EnterClass + Done of a request
// already classified (Classify is measured apart, in BenchmarkClassify).
func BenchmarkEnterDone(b *testing.B) {
	cases := []struct{ name, toml, key string }{
		{"plain", benchPlain, ""},
		{"rate", `
[[group]]
name = "api"
key = "header:X-Tenant"
  [group.rate]
  rate = 1e9
  [group.concurrency]
  law = "fixed"
  limit = 1000000
`, "tenant-1"},
		{"fairshare", `
[[group]]
name = "api"
key = "header:X-Tenant"
  [group.concurrency]
  law = "fixed"
  limit = 1000000
`, "tenant-1"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			g := benchGate(b, c.toml)
			cl, _ := g.ClassOf("api", c.key, 4)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				p, _, ok := g.EnterClass(ctx, cl)
				if !ok {
					b.Fatal("rejected")
				}
				p.Done(Success)
			}
		})
		b.Run(c.name+"/parallel", func(b *testing.B) {
			g := benchGate(b, c.toml)
			var n atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				key := c.key
				if key != "" {
					key += "-" + strconv.Itoa(int(n.Add(1)))
				}
				cl, _ := g.ClassOf("api", key, 4)
				ctx := context.Background()
				for pb.Next() {
					p, _, ok := g.EnterClass(ctx, cl)
					if !ok {
						b.Fatal("rejected")
					}
					p.Done(Success)
				}
			})
		})
	}
}

// BenchmarkEnterDoneObserved is the plain admitted path with an Observer
// that does nothing: the cost of the hook itself.
func BenchmarkEnterDoneObserved(b *testing.B) {
	g, err := New(Params{Config: config(b, benchPlain), Observer: nopObserver{}, Resources: NoResources})
	if err != nil {
		b.Fatal(err)
	}
	cl, _ := g.ClassOf("api", "", 4)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p, _, ok := g.EnterClass(ctx, cl)
		if !ok {
			b.Fatal("rejected")
		}
		p.Done(Success)
	}
}

// BenchmarkEnterDoneRequest is the same through Enter(*http.Request):
// classification included.
func BenchmarkEnterDoneRequest(b *testing.B) {
	g := benchGate(b, benchPlain)
	r := httptest.NewRequest(http.MethodGet, "/api/users", nil)
	b.ReportAllocs()
	for b.Loop() {
		p, _, ok := g.Enter(r)
		if !ok {
			b.Fatal("rejected")
		}
		p.Done(Success)
	}
}

// BenchmarkClassify routes a request through four groups with a header key
// and a header priority.
func BenchmarkClassify(b *testing.B) {
	g := benchGate(b, routingConfig)
	r := request("/api/v1/users", "X-Tenant", "acme", "X-Priority", "critical")
	b.ReportAllocs()
	for b.Loop() {
		if g.Classify(r).Group() != "api" {
			b.Fatal("misrouted")
		}
	}
}

// BenchmarkMiddleware is the admitted path of the net/http middleware with a
// handler that writes a small body.
func BenchmarkMiddleware(b *testing.B) {
	g := benchGate(b, benchPlain)
	ok := []byte("ok")
	h := Middleware(g, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(ok) }))
	b.Run("single", func(b *testing.B) {
		w := &discardWriter{h: http.Header{}}
		r := request("/")
		b.ReportAllocs()
		for b.Loop() {
			h.ServeHTTP(w, r)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			w := &discardWriter{h: http.Header{}}
			r := request("/")
			for pb.Next() {
				h.ServeHTTP(w, r)
			}
		})
	})
}

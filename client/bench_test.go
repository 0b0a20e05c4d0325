package client

import (
	"net/http"
	"testing"
)

// stubTransport answers every request with one prebuilt 200: what is left
// of a RoundTrip is the Client's own work.
type stubTransport struct{ resp *http.Response }

func (s stubTransport) RoundTrip(*http.Request) (*http.Response, error) { return s.resp, nil }

func benchRequest(b *testing.B) *http.Request {
	req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:8080/api", nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("X-Tenant", "acme")
	req.Header.Set("X-Priority", "default")
	return req
}

// BenchmarkTransport is the Client's overhead per request that is not
// dropped: "base" is the stub alone, "client" the stub under a Transport
// (the request already carries its tags), "client-parallel" the same from
// every core at once (one backend: the atomic counters are shared),
// "client-tagging" a Transport that adds a tag the request lacks (a copy
// of the request and its header).
func BenchmarkTransport(b *testing.B) {
	stub := stubTransport{resp: &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody}}
	run := func(b *testing.B, rt http.RoundTripper) {
		req := benchRequest(b)
		b.ReportAllocs()
		for b.Loop() {
			if resp, err := rt.RoundTrip(req); err != nil || resp.StatusCode != 200 {
				b.Fatal(resp, err)
			}
		}
	}
	b.Run("base", func(b *testing.B) { run(b, stub) })
	c := mustNew(b, Config{Tags: Tags{Tenant: "acme", Priority: PriorityDefault}})
	b.Run("client", func(b *testing.B) { run(b, c.Transport(stub)) })
	b.Run("client-parallel", func(b *testing.B) {
		rt := c.Transport(stub)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			req := benchRequest(b)
			for pb.Next() {
				if resp, err := rt.RoundTrip(req); err != nil || resp.StatusCode != 200 {
					b.Error(resp, err)
					return
				}
			}
		})
	})
	tagging := mustNew(b, Config{Tags: Tags{Tenant: "acme", Priority: PriorityDefault, Cost: 3}})
	b.Run("client-tagging", func(b *testing.B) { run(b, tagging.Transport(stub)) })
}

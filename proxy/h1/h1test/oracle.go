// Package h1test holds what the tests of sluice's HTTP/1.1 wire code (package
// h1) and of the proxy that serves with it judge by: net/http's reading of a
// request head, the oracle of the differential tests and fuzz targets.
package h1test

import (
	"bufio"
	"bytes"
	"net/http"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http/httpguts"
)

// NetHTTPReads reads b as net/http's server reads a request head (its
// readRequest and the checks of conn.readRequest and serverHandler), and
// returns the request, or nil when net/http refuses it.
func NetHTTPReads(b []byte) *http.Request {
	r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(b)))
	if err != nil || r.ProtoMajor != 1 {
		return nil
	}
	// ReadRequest takes Host out of the map, where the server looks for it.
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(b)))
	_, _ = tp.ReadLine()
	mh, err := tp.ReadMIMEHeader()
	if err != nil {
		return nil
	}
	hosts, haveHost := mh["Host"]
	if r.ProtoAtLeast(1, 1) && (!haveHost || len(hosts) == 0) && r.Method != "CONNECT" {
		return nil
	}
	if len(hosts) == 1 && !httpguts.ValidHostHeader(hosts[0]) {
		return nil
	}
	for k, vv := range r.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return nil
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return nil
			}
		}
	}
	expect := r.Header.Get("Expect")
	if expect != "" && !(r.ProtoAtLeast(1, 1) && strings.EqualFold(expect, "100-continue")) {
		return nil // 417
	}
	return r
}

// Recv waits up to limit for a value on ch, and fails t if none comes.
func Recv[T any](t testing.TB, ch <-chan T, what string, limit time.Duration) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(limit):
		t.Fatalf("waiting for %s: nothing came", what)
		var zero T
		return zero
	}
}

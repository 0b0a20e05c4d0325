package gate

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
)

func TestPeerAddr(t *testing.T) {
	cases := map[string]string{
		"192.0.2.1:80":           "192.0.2.1",
		"[2001:db8::1]:80":       "2001:db8::1",
		"[fe80::1%eth0]:8080":    "fe80::1", // the zone is not part of a key
		"2001:db8::1":            "2001:db8::1",
		"192.0.2.1":              "192.0.2.1",
		"[::ffff:192.0.2.1]:80":  "192.0.2.1",
		"[2001:DB8:0::1]:80":     "2001:db8::1",
		"host.example:1":         "",
		"[broken":                "",
		"":                       "",
		"@":                      "", // a unix socket peer
		"192.0.2.1, 10.0.0.1:80": "",
	}
	for in, want := range cases {
		if got := PeerAddr(in); got != want {
			t.Errorf("PeerAddr(%q) = %q, want %q", in, got, want)
		}
	}
	for _, in := range []string{"192.0.2.1:80", "[2001:db8::1]:80", "192.0.2.1"} {
		if n := testing.AllocsPerRun(100, func() { PeerAddr(in) }); n != 0 {
			t.Errorf("PeerAddr(%q) allocates", in)
		}
	}
}

func mustTrust(t testing.TB, list ...string) *TrustedProxies {
	t.Helper()
	tp, err := ParseTrustedProxies(list)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func TestClientAddr(t *testing.T) {
	lb := mustTrust(t, "10.0.0.0/8", "fd00::/8", "192.0.2.7", "unix")
	cases := []struct {
		name   string
		trust  *TrustedProxies
		remote string
		xff    []string
		want   string
	}{
		{"no trusted set: the peer", nil, "198.51.100.1:5", []string{"203.0.113.9"}, "198.51.100.1"},
		{"untrusted peer: the peer, whatever it claims", lb, "198.51.100.1:5", []string{"10.0.0.1, 203.0.113.9"}, "198.51.100.1"},
		{"trusted peer, no field: the peer", lb, "10.1.2.3:5", nil, "10.1.2.3"},
		{"trusted peer: the address it added", lb, "10.1.2.3:5", []string{"203.0.113.9"}, "203.0.113.9"},
		{"a spoofed prefix is skipped", lb, "10.1.2.3:5", []string{"1.1.1.1, 2.2.2.2, 203.0.113.9"}, "203.0.113.9"},
		{"trusted hops are walked", lb, "10.1.2.3:5", []string{"203.0.113.9, 10.9.9.9, 192.0.2.7"}, "203.0.113.9"},
		{"several field lines: the last is the right end", lb, "10.1.2.3:5", []string{"1.1.1.1", "203.0.113.9, 10.9.9.9"}, "203.0.113.9"},
		{"every hop trusted: the left-most", lb, "10.1.2.3:5", []string{"10.0.0.1, 10.0.0.2"}, "10.0.0.1"},
		{"junk ends the walk at the last trusted address", lb, "10.1.2.3:5", []string{"203.0.113.9, junk, 10.0.0.2"}, "10.0.0.2"},
		{"junk right at the peer: the peer", lb, "10.1.2.3:5", []string{"unknown"}, "10.1.2.3"},
		{"empty elements skipped", lb, "10.1.2.3:5", []string{" 203.0.113.9 ,, ", ""}, "203.0.113.9"},
		{"ports dropped", lb, "10.1.2.3:5", []string{"203.0.113.9:4711"}, "203.0.113.9"},
		{"IPv6 with brackets and port", lb, "[fd00::1]:5", []string{"[2001:db8::9]:443"}, "2001:db8::9"},
		{"IPv6 spelled canonically", lb, "[fd00::1]:5", []string{"2001:DB8:0:0::9"}, "2001:db8::9"},
		{"IPv4-mapped read as IPv4", lb, "10.1.2.3:5", []string{"::ffff:203.0.113.9"}, "203.0.113.9"},
		{"a mapped trusted hop is trusted", lb, "10.1.2.3:5", []string{"203.0.113.9, ::ffff:10.0.0.5"}, "203.0.113.9"},
		{"zones refused", lb, "10.1.2.3:5", []string{"fe80::1%eth0"}, "10.1.2.3"},
		{"a unix peer, trusted", lb, "@", []string{"203.0.113.9"}, "203.0.113.9"},
		{"a unix peer, untrusted", mustTrust(t, "10.0.0.0/8"), "", []string{"203.0.113.9"}, ""},
		{"only unix trusted: an IP peer is not", mustTrust(t, "unix"), "10.1.2.3:5", []string{"203.0.113.9"}, "10.1.2.3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.trust.ClientAddr(c.remote, c.xff); got != c.want {
				t.Errorf("ClientAddr(%q, %q) = %q, want %q", c.remote, c.xff, got, c.want)
			}
		})
	}
}

func TestClientAddrDoesNotAllocate(t *testing.T) {
	lb := mustTrust(t, "10.0.0.0/8", "fd00::/8")
	for _, c := range []struct {
		remote string
		xff    []string
	}{
		{"198.51.100.1:5", nil},
		{"10.1.2.3:5", nil},
		{"10.1.2.3:5", []string{"203.0.113.9, 10.0.0.1"}},
		{"[fd00::1]:5", []string{"2001:db8::9"}},
	} {
		if n := testing.AllocsPerRun(100, func() { lb.ClientAddr(c.remote, c.xff) }); n != 0 {
			t.Errorf("ClientAddr(%q, %q) allocates", c.remote, c.xff)
		}
	}
}

func TestParseTrustedProxies(t *testing.T) {
	if tp, err := ParseTrustedProxies(nil); tp != nil || err != nil {
		t.Errorf("ParseTrustedProxies(nil) = %v, %v; want nil, nil", tp, err)
	}
	if _, err := ParseTrustedProxies([]string{"10.0.0.0/8", "lb"}); err == nil || !strings.Contains(err.Error(), `"lb"`) {
		t.Errorf("a bad entry: %v", err)
	}
}

// FuzzClientAddr compares ClientAddr with a plain reading of the rule: split
// every field line on commas, walk from the right end while the addresses
// are trusted. The result is always a canonical address or "", and it is
// never one the set trusts unless every address walked is.
func FuzzClientAddr(f *testing.F) {
	f.Add("10.1.2.3:5", "1.1.1.1, 203.0.113.9", "10.0.0.9")
	f.Add("[fd00::1]:5", "[2001:db8::9]:443", "")
	f.Add("198.51.100.1:5", "10.0.0.1", "")
	f.Add("10.1.2.3:5", "junk,,", "::ffff:10.0.0.5")
	lb := mustTrust(f, "10.0.0.0/8", "fd00::/8", "192.0.2.7")
	f.Fuzz(func(t *testing.T, remote, line1, line2 string) {
		xff := []string{line1, line2}
		got := lb.ClientAddr(remote, xff)

		want, trusted := lb.Peer(remote)
		var elems []string
		for _, l := range xff {
			elems = append(elems, strings.Split(l, ",")...)
		}
		for i := len(elems) - 1; trusted && i >= 0; i-- {
			el := strings.Trim(elems[i], " \t")
			if el == "" {
				continue
			}
			host := el
			if h, port, err := net.SplitHostPort(el); err == nil {
				if port == "" || strings.Trim(port, "0123456789") != "" {
					break
				}
				host = h
			} else if strings.HasPrefix(el, "[") && strings.HasSuffix(el, "]") {
				host = el[1 : len(el)-1]
			}
			a, err := netip.ParseAddr(host)
			if err != nil || a.Zone() != "" || strings.Contains(host, "[") {
				break
			}
			want = a.Unmap().String()
			trusted = lb.contains(a.Unmap())
		}
		if got != want {
			t.Fatalf("ClientAddr(%q, %q) = %q, want %q", remote, xff, got, want)
		}
		if got != "" {
			if a, err := netip.ParseAddr(got); err != nil || a.String() != got {
				t.Fatalf("ClientAddr(%q, %q) = %q: not a canonical address", remote, xff, got)
			}
		}
	})
}

// FuzzPeerAddr: the peer address is "" or a canonical IP address, and the
// host of every host:port net.JoinHostPort makes of an address comes back.
func FuzzPeerAddr(f *testing.F) {
	for _, s := range []string{"192.0.2.1", "2001:db8::1", "fe80::1%eth0", "::ffff:1.2.3.4", "", "[", "]:", ":::", "a:b:c"} {
		f.Add(s, "80")
	}
	f.Fuzz(func(t *testing.T, host, port string) {
		got := PeerAddr(host)
		if got != "" {
			if a, err := netip.ParseAddr(got); err != nil || a.String() != got {
				t.Fatalf("PeerAddr(%q) = %q: not a canonical address", host, got)
			}
		}
		a, err := netip.ParseAddr(host)
		if err != nil || strings.ContainsAny(port, ":[]") {
			return
		}
		want := a.WithZone("").Unmap().String()
		if got := PeerAddr(net.JoinHostPort(host, port)); got != want {
			t.Fatalf("PeerAddr(%q) = %q, want %q", net.JoinHostPort(host, port), got, want)
		}
	})
}

// TestIPKeyBehindTrustedProxies: with server.trusted_proxies, the "ip" key is
// the client's address as the trusted hops report it, and a client cannot
// mint a key per request by prepending addresses.
func TestIPKeyBehindTrustedProxies(t *testing.T) {
	g, _ := newGate(t, `
[server]
trusted_proxies = ["10.0.0.0/8"]
[[group]]
name = "all"
key = "ip"
`)
	if g.TrustedProxies() == nil {
		t.Fatal("TrustedProxies() = nil with server.trusted_proxies set")
	}
	keys := map[string]bool{}
	for i := range 5 {
		r := request("/x", "X-Forwarded-For", fmt.Sprintf("192.0.2.%d, 203.0.113.9", i))
		r.RemoteAddr = "10.1.2.3:4000"
		keys[g.Classify(r).Key] = true
	}
	if len(keys) != 1 || !keys["203.0.113.9"] {
		t.Errorf("keys %v, want only the address the trusted hop added", keys)
	}
	r := request("/x", "X-Forwarded-For", "203.0.113.9")
	r.RemoteAddr = "198.51.100.7:4000" // not a trusted peer
	if k := g.Classify(r).Key; k != "198.51.100.7" {
		t.Errorf("key %q from an untrusted peer, want the peer's address", k)
	}
	plain, _ := newGate(t, `
[[group]]
name = "all"
key = "ip"
`)
	r = request("/x", "X-Forwarded-For", "203.0.113.9")
	r.RemoteAddr = "10.1.2.3:4000"
	if k := plain.Classify(r).Key; k != "10.1.2.3" || plain.TrustedProxies() != nil {
		t.Errorf("without trusted proxies: key %q (want the peer's), set %v", k, plain.TrustedProxies())
	}
}

// BenchmarkClientAddr finds the client's address of a request from a peer
// the set trusts (its X-Forwarded-For read) and from one it does not: what
// the "ip" key costs every request.
func BenchmarkClientAddr(b *testing.B) {
	lb := mustTrust(b, "10.0.0.0/8", "127.0.0.1")
	for _, c := range []struct {
		name, remote string
		xff          []string
	}{
		{"trusted", "127.0.0.1:40000", []string{"203.0.113.9"}},
		{"untrusted", "198.51.100.1:40000", nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if lb.ClientAddr(c.remote, c.xff) == "" {
					b.Fatal("no address")
				}
			}
		})
	}
}

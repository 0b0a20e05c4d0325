package proxy

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/proxy/breaker"
)

func TestGRPCKindOf(t *testing.T) {
	for ct, want := range map[string]grpcKind{
		"":                              grpcNone,
		"application/json":              grpcNone,
		"application/grpc":              grpcNative,
		"Application/GRPC":              grpcNative,
		"application/grpc+proto":        grpcNative,
		"application/grpc;charset=utf8": grpcNative,
		"application/grpcx":             grpcNone,
		"application/grpc-web":          grpcWeb,
		"application/grpc-web+proto":    grpcWeb,
		"application/grpc-web-text":     grpcWeb,
		"application/grpc-webx":         grpcNone,
		"application/grp":               grpcNone,
	} {
		if got := grpcKindOf(ct); got != want {
			t.Errorf("grpcKindOf(%q) = %d, want %d", ct, got, want)
		}
	}
}

func TestParseGRPCStatus(t *testing.T) {
	for s, want := range map[string]int{"0": 0, "14": 14, " 8 ": 8, "016": 16, "999999999": 999999999} {
		if got, ok := parseGRPCStatus(s); !ok || got != want {
			t.Errorf("parseGRPCStatus(%q) = %d, %v; want %d", s, got, ok, want)
		}
	}
	for _, s := range []string{"", " ", "-1", "+1", "1.0", "0x1", "1234567890", "１"} {
		if _, ok := parseGRPCStatus(s); ok {
			t.Errorf("parseGRPCStatus(%q) accepted", s)
		}
	}
}

func TestGRPCOutcome(t *testing.T) {
	want := map[int]gate.Outcome{
		0: gate.Success, 1: gate.Ignored, 2: gate.Dropped, 3: gate.Ignored, 4: gate.Dropped,
		5: gate.Ignored, 6: gate.Ignored, 7: gate.Ignored, 8: gate.Dropped, 9: gate.Ignored,
		10: gate.Ignored, 11: gate.Ignored, 12: gate.Ignored, 13: gate.Dropped, 14: gate.Dropped,
		15: gate.Dropped, 16: gate.Ignored, 17: gate.Dropped, -1: gate.Dropped,
	}
	for code, o := range want {
		if got := grpcOutcome(code); got != o {
			t.Errorf("grpcOutcome(%d) = %v, want %v", code, got, o)
		}
	}
}

func TestStatusOutcome(t *testing.T) {
	for code, want := range map[int]gate.Outcome{101: gate.Success, 200: gate.Success, 204: gate.Success, 302: gate.Success, 304: gate.Success,
		400: gate.Ignored, 404: gate.Ignored, 429: gate.Ignored, 499: gate.Ignored, 500: gate.Dropped, 502: gate.Dropped, 503: gate.Dropped, 504: gate.Dropped} {
		if got := statusOutcome(code); got != want {
			t.Errorf("statusOutcome(%d) = %v, want %v", code, got, want)
		}
	}
}

func TestGRPCResponseOutcome(t *testing.T) {
	for _, tc := range []struct {
		h    http.Header
		g    grpcKind
		want gate.Outcome
	}{
		{http.Header{"Trailer:Grpc-Status": {"0"}}, grpcNative, gate.Success},
		{http.Header{"Trailer:Grpc-Status": {"14"}}, grpcNative, gate.Dropped},
		{http.Header{"Grpc-Status": {"5"}}, grpcNative, gate.Ignored},
		{http.Header{}, grpcNative, gate.Dropped},
		{http.Header{}, grpcWeb, gate.Success},
		{http.Header{"Grpc-Status": {"x"}}, grpcWeb, gate.Dropped},
	} {
		if got := grpcResponseOutcome(tc.h, tc.g); got != tc.want {
			t.Errorf("grpcResponseOutcome(%v, %d) = %v, want %v", tc.h, tc.g, got, tc.want)
		}
	}
}

func TestIsIdempotent(t *testing.T) {
	for m, want := range map[string]bool{"GET": true, "HEAD": true, "OPTIONS": true, "TRACE": true, "PUT": true, "DELETE": true, "POST": false, "PATCH": false} {
		if isIdempotent(m, false) != want {
			t.Errorf("isIdempotent(%s) = %v", m, !want)
		}
	}
	if !isIdempotent("POST", true) {
		t.Error("an Idempotency-Key makes POST idempotent")
	}
}

func TestParseUpstream(t *testing.T) {
	for in, want := range map[string]upstream{
		"http://127.0.0.1:9000": {network: "tcp", addr: "127.0.0.1:9000", host: "127.0.0.1:9000"},
		"http://app":            {network: "tcp", addr: "app:80", host: "app"},
		"http://[::1]:81/base/": {network: "tcp", addr: "[::1]:81", host: "[::1]:81", prefix: "/base"},
		"http://h/a%20b":        {network: "tcp", addr: "h:80", host: "h", prefix: "/a%20b"},
		"unix:///run/app.sock":  {network: "unix", addr: "/run/app.sock", host: "localhost"},
	} {
		got, err := parseUpstream(in)
		if err != nil || got != want {
			t.Errorf("parseUpstream(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "https://h", "ftp://h", "http://", "http://u:p@h", "http://h/?q=1", "http://h/#f", "unix://host/x", "unix:", "::"} {
		if _, err := parseUpstream(in); err == nil || !strings.HasPrefix(err.Error(), "proxy: ") {
			t.Errorf("parseUpstream(%q): err %v", in, err)
		}
	}
}

func TestParamsValidate(t *testing.T) {
	if err := (Params{Upstream: "http://127.0.0.1:1"}).Validate(); err != nil {
		t.Fatal(err)
	}
	err := Params{Protocol: 9, Gate: testGate(t, ""), TrustedProxies: &gate.TrustedProxies{}, Host: "a\nb", DialTimeout: -1, UpstreamTimeout: -1, ClientTimeout: -1,
		IdleConnTimeout: -1, MaxIdleConns: -1, MaxResponseHeaderBytes: -1, Breaker: breaker.Params{Probes: -1}}.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"upstream is required", "protocol", "trusted proxies", "host", "dial timeout", "upstream timeout",
		"client timeout", "idle connection timeout", "max idle", "header bytes", "probes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	if _, err := New(Params{}); err == nil {
		t.Error("New accepted params without an upstream")
	}
	if err := (Params{Upstream: "http://h", DisableBreaker: true, Breaker: breaker.Params{Probes: -1}}).Validate(); err != nil {
		t.Errorf("a disabled breaker's params were validated: %v", err)
	}
}

func TestServerParamsValidate(t *testing.T) {
	err := ServerParams{ReadHeaderTimeout: -1, IdleTimeout: -1, MaxHeaderBytes: -1, MaxConcurrentStreams: -1}.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"handler", "read header", "idle", "header bytes", "streams"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	s, err := NewServer(ServerParams{Handler: http.NotFoundHandler()})
	if err != nil {
		t.Fatal(err)
	}
	if s.ReadHeaderTimeout <= 0 || s.IdleTimeout <= 0 || s.MaxHeaderBytes != defaultMaxHeaderBytes || s.ReadTimeout != 0 || s.WriteTimeout != 0 ||
		!s.Protocols.HTTP1() || !s.Protocols.HTTP2() || !s.Protocols.UnencryptedHTTP2() {
		t.Errorf("server settings: %+v", s)
	}
}

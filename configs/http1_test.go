package configs

import (
	"strings"
	"testing"
)

// TestServerHTTP1: server.http1 is "sluice" by default, "net/http" when
// asked, anything else an error naming the key and its line; the own server
// serves only plain text without the whole-request timeouts.
func TestServerHTTP1(t *testing.T) {
	const upstream = "[upstream]\nurl = \"http://127.0.0.1:9000\"\n"
	for _, tc := range []struct {
		server string
		want   HTTP1Server
		own    bool
		err    string
	}{
		{"", HTTP1Sluice, true, ""},
		{`http1 = "net/http"`, HTTP1NetHTTP, false, ""},
		{`http1 = "sluice"` + "\nread_timeout = \"1m\"", HTTP1Sluice, false, ""},
		{`http1 = "sluice"` + "\nwrite_timeout = \"1m\"", HTTP1Sluice, false, ""},
		{`http1 = "sluice"` + "\n[upstream]\nprotocol = \"h2c\"", HTTP1Sluice, false, ""},
		{`http1 = "fasthttp"`, "", false, `sluice.toml:2: server.http1: must be one of "sluice", "net/http", got "fasthttp"`},
	} {
		src := "[server]\n" + tc.server + "\n" + upstream
		if strings.Contains(tc.server, "[upstream]") {
			src = "[server]\n" + strings.Replace(tc.server, "[upstream]", "[upstream]\nurl = \"http://127.0.0.1:9000\"", 1) + "\n"
		}
		cfg, err := Parse("sluice.toml", []byte(src))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.server, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.server, err)
		}
		if cfg.Server.HTTP1 != tc.want || cfg.OwnHTTP1() != tc.own {
			t.Errorf("%q: http1 %q, own %v; want %q, %v", tc.server, cfg.Server.HTTP1, cfg.OwnHTTP1(), tc.want, tc.own)
		}
	}
}

package configs

import (
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/gate/spec"
	"github.com/sluicehq/sluice/limits"
)

// maxLimit bounds counts that no deployment needs to exceed (the gate's
// bound of a concurrency limit): past it a value is a typo more often than
// a choice.
const maxLimit = spec.MaxLimit

const (
	ms   = Duration(time.Millisecond)
	sec  = Duration(time.Second)
	min1 = Duration(time.Minute)
	hour = Duration(time.Hour)
	day  = 24 * hour
)

// Validate checks c and returns every problem, as an [Errors], or nil. A
// Config from Load or Parse names the line of each problem; one built in
// Go names only the key path. Validate does not touch the file system and
// does not change c; call SetDefaults first on a config built in Go.
func (c *Config) Validate() error {
	ck := &checker{src: c.src}
	c.check(ck)
	ck.errs.sort()
	return ck.errs.err()
}

func (c *Config) check(ck *checker) {
	c.Server.check(ck, "server")
	c.Upstream.check(ck, "upstream")
	c.Probe.check(ck, "probe")
	c.Admin.check(ck, "admin")
	c.Control.check(ck, "control")
	if c.Redis != nil {
		c.Redis.check(ck, "redis")
	}
	c.checkGroups(ck)
	if c.Permit != nil || c.RLS != nil {
		groups := make(map[string]bool, len(c.Groups))
		for _, g := range c.Groups {
			groups[g.Name] = true
		}
		if c.Permit != nil {
			c.Permit.check(ck, "permit", groups)
		}
		if c.RLS != nil {
			c.RLS.check(ck, "rls", groups)
		}
	}
}

func (s *Server) check(ck *checker, p string) {
	ck.listenAddress(join(p, "listen"), s.Listen, true)
	if (s.TLSCert == "") != (s.TLSKey == "") {
		missing := join(p, "tls_key")
		if s.TLSCert == "" {
			missing = join(p, "tls_cert")
		}
		ck.errorf(missing, "tls_cert and tls_key go together: set both or neither")
	}
	ck.duration(join(p, "read_header_timeout"), s.ReadHeaderTimeout, ms, hour)
	ck.optionalDuration(join(p, "read_timeout"), s.ReadTimeout, ms, day)
	ck.optionalDuration(join(p, "write_timeout"), s.WriteTimeout, ms, day)
	ck.optionalDuration(join(p, "idle_timeout"), s.IdleTimeout, ms, day)
	ck.intRange(join(p, "max_header_bytes"), s.MaxHeaderBytes, 4<<10, 64<<20)
	ck.duration(join(p, "shutdown_grace"), s.ShutdownGrace, 0, hour)
	// trusted_proxies: the gate's (checkGroups)
	ck.intRange(join(p, "max_connections"), s.MaxConnections, 0, maxConnections)
	oneOf(ck, join(p, "http1"), s.HTTP1, HTTP1Sluice, HTTP1NetHTTP)
}

// maxConnections bounds server.max_connections: far beyond the file
// descriptors any machine gives a process.
const maxConnections = 10_000_000

func (u *Upstream) check(ck *checker, p string) {
	scheme := ck.upstreamURL(join(p, "url"), u.URL)
	if oneOf(ck, join(p, "protocol"), u.Protocol, ProtocolAuto, ProtocolHTTP1, ProtocolH2C) &&
		u.Protocol == ProtocolH2C && scheme == "https" {
		ck.errorf(join(p, "protocol"), `"h2c" is HTTP/2 without TLS; an https upstream negotiates HTTP/2 itself: use "auto"`)
	}
	ck.duration(join(p, "dial_timeout"), u.DialTimeout, ms, min1)
	ck.optionalDuration(join(p, "response_header_timeout"), u.ResponseHeaderTimeout, ms, day)
	ck.optionalDuration(join(p, "idle_conn_timeout"), u.IdleConnTimeout, ms, day)
	ck.intRange(join(p, "max_idle_conns_per_host"), u.MaxIdleConnsPerHost, 1, 100_000)
	if u.CAFile != "" && scheme != "" && scheme != "https" {
		ck.errorf(join(p, "ca_file"), "only used for an https upstream, and url is %s://", scheme)
	}
	u.Circuit.check(ck, join(p, "circuit"))
}

func (c *Circuit) check(ck *checker, p string) {
	ck.ratio(join(p, "failure_ratio"), c.FailureRatio)
	ck.intRange(join(p, "min_requests"), c.MinRequests, 1, maxLimit)
	ck.duration(join(p, "window"), c.Window, ms, hour)
	ck.intRange(join(p, "consecutive_failures"), c.ConsecutiveFailures, 0, maxLimit)
	ck.duration(join(p, "open_duration"), c.OpenDuration, ms, hour)
	ck.intRange(join(p, "half_open_probes"), c.HalfOpenProbes, 1, 1000)
}

func (pr *Probe) check(ck *checker, p string) {
	if oneOf(ck, join(p, "source"), pr.Source, ProbeSourceAuto, ProbeSourceHost) && pr.Source == ProbeSourceHost {
		if pr.Cgroup != "" {
			ck.errorf(join(p, "cgroup"), `source = "host" measures the whole host: unset cgroup, or set source = "auto"`)
		}
		if pr.PIDFile != "" {
			ck.errorf(join(p, "pid_file"), `source = "host" measures the whole host: unset pid_file, or set source = "auto"`)
		}
	}
	if pr.Cgroup != "" && !strings.HasPrefix(pr.Cgroup, "/") {
		ck.errorf(join(p, "cgroup"), "must be an absolute path such as \"/sys/fs/cgroup/app.slice\", got %q", pr.Cgroup)
	}
	if pr.Cgroup != "" && pr.PIDFile != "" {
		ck.errorf(join(p, "pid_file"), "set cgroup or pid_file, not both")
	}
	if !strings.HasPrefix(pr.Root, "/") {
		ck.errorf(join(p, "root"), "must be an absolute path, got %q", pr.Root)
	}
}

func (a *Admin) check(ck *checker, p string) {
	if a.Listen == "" {
		return // admin API off
	}
	if ck.listenAddress(join(p, "listen"), a.Listen, false) && !isLocal(a.Listen) && a.TokenFile == "" {
		ck.errorf(join(p, "listen"), "%q is reachable from other machines: set admin.token_file, or listen on loopback", a.Listen)
	}
}

// check checks state_max_age; interval and save_interval are the gate's
// (checkGroups).
func (ct *Control) check(ck *checker, p string) {
	saveOK := ct.SaveInterval >= Duration(spec.MinInterval) && ct.SaveInterval <= Duration(spec.MaxSaveInterval)
	if ck.duration(join(p, "state_max_age"), ct.StateMaxAge, 10*ms, 365*day) && saveOK && ct.StateMaxAge < ct.SaveInterval {
		ck.errorf(join(p, "state_max_age"), "must be ≥ save_interval (%s): a file saved that often is never older while sluice runs, got %s",
			ct.SaveInterval, ct.StateMaxAge)
	}
}

func (r *Redis) check(ck *checker, p string) {
	r.checkServers(ck, p)
	if r.DB < 0 {
		ck.errorf(join(p, "db"), "must not be negative, got %d", r.DB)
	} else if r.DB != 0 && len(r.ClusterAddresses) > 0 {
		ck.errorf(join(p, "db"), "a Redis Cluster has only database 0, got %d", r.DB)
	}
	if r.CAFile != "" && !r.TLS {
		ck.errorf(join(p, "ca_file"), "only used with tls = true")
	}
	ck.duration(join(p, "timeout"), r.Timeout, ms, sec)
	oneOf(ck, join(p, "fallback"), r.Fallback, limits.FallbackLocal, limits.FallbackOpen, limits.FallbackClosed)
	ck.intRange(join(p, "nodes"), r.Nodes, 1, 10_000)
}

// listenAddress checks "host:port" (port 0 picks a free port) or
// "unix:///path".
func (c *checker) listenAddress(path, addr string, required bool) bool {
	if addr == "" {
		if required {
			c.errorf(path, `must be "host:port" or "unix:///path.sock", got ""`)
		}
		return !required
	}
	if rest, ok := strings.CutPrefix(addr, "unix://"); ok {
		if !strings.HasPrefix(rest, "/") {
			c.errorf(path, "must be unix:// and an absolute path, such as \"unix:///run/sluice.sock\", got %q", addr)
			return false
		}
		return true
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || !validPort(port, true) || strings.ContainsAny(host, " /") {
		c.errorf(path, `must be "host:port" or "unix:///path.sock", got %q`, addr)
		return false
	}
	return true
}

// hostPort checks a "host:port" to connect to.
func (c *checker) hostPort(path, addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || !validPort(port, false) || strings.ContainsAny(host, " /") {
		c.errorf(path, `must be "host:port", got %q`, addr)
		return false
	}
	return true
}

// upstreamURL checks the upstream URL and returns its scheme, or "" if the
// URL is not valid.
func (c *checker) upstreamURL(path, raw string) string {
	const want = `"http://host:port", "https://host:port" or "unix:///path.sock"`
	if raw == "" {
		c.errorf(path, "required: %s", want)
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		c.errorf(path, "must be %s, got %q", want, raw)
		return ""
	}
	switch u.Scheme {
	case "unix":
		if u.Host != "" || !strings.HasPrefix(u.Path, "/") || u.RawQuery != "" || u.Fragment != "" {
			c.errorf(path, "a unix socket is unix:// and an absolute path, such as \"unix:///run/app.sock\", got %q", raw)
			return ""
		}
	case "http", "https":
		if u.Host == "" || u.Hostname() == "" || u.Port() != "" && !validPort(u.Port(), false) {
			c.errorf(path, "must be %s, got %q", want, raw)
			return ""
		}
		if u.User != nil {
			c.errorf(path, "must not hold credentials, got %q", raw)
		}
		if u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "" {
			c.errorf(path, "must not have a path, query or fragment (requests keep their own path), got %q", raw)
		}
	default:
		c.errorf(path, "must be %s, got %q", want, raw)
		return ""
	}
	return u.Scheme
}

func validPort(port string, zeroOK bool) bool {
	n, err := strconv.Atoi(port)
	if err != nil || strings.HasPrefix(port, "+") || strings.HasPrefix(port, "-") {
		return false
	}
	return n <= 65535 && (n > 0 || zeroOK)
}

// isLocal reports whether a valid listen address is reachable only from
// this machine: a unix socket, "localhost" or a loopback IP.
func isLocal(addr string) bool {
	if strings.HasPrefix(addr, "unix://") {
		return true
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

package main

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sluicehq/sluice/admin"
	"github.com/sluicehq/sluice/configs"
	ilisten "github.com/sluicehq/sluice/internal/listen"
	"github.com/sluicehq/sluice/limits/redis"
	"github.com/sluicehq/sluice/probe"
	"github.com/sluicehq/sluice/proxy"
	"github.com/sluicehq/sluice/proxy/breaker"
)

// This file maps the configuration onto the parameters of the parts the
// daemon wires together. configs' "0 means none" is spelled differently by
// each part, so the translation lives here, in one place.

// noTimeout stands for "none" where a part reads zero as "its default": a
// day, the longest timeout configs accepts.
const noTimeout = 24 * time.Hour

func orNone(d configs.Duration) time.Duration {
	if d == 0 {
		return noTimeout
	}
	return time.Duration(d)
}

// proxyParams returns the proxy's parameters for cfg's [upstream].
func proxyParams(cfg *configs.Config) proxy.Params {
	u := &cfg.Upstream
	p := proxy.Params{
		Upstream:        u.URL,
		DialTimeout:     time.Duration(u.DialTimeout),
		UpstreamTimeout: orNone(u.ResponseHeaderTimeout),
		IdleConnTimeout: orNone(u.IdleConnTimeout),
		MaxIdleConns:    u.MaxIdleConnsPerHost,
	}
	switch u.Protocol {
	case configs.ProtocolHTTP1:
		p.Protocol = proxy.ProtocolHTTP1
	case configs.ProtocolH2C:
		p.Protocol = proxy.ProtocolH2C
	default:
		p.Protocol = proxy.ProtocolAuto
	}
	p.Breaker, p.DisableBreaker = breakerParams(&u.Circuit)
	return p
}

// breakerParams maps [upstream.circuit] onto the proxy's breaker: a trigger
// configs turns off with 0 is negative there.
func breakerParams(c *configs.Circuit) (breaker.Params, bool) {
	if c.Off() {
		return breaker.Params{}, true
	}
	b := breaker.Params{
		Window:              time.Duration(c.Window),
		MinRequests:         c.MinRequests,
		FailureRatio:        c.FailureRatio,
		ConsecutiveFailures: c.ConsecutiveFailures,
		Cooldown:            time.Duration(c.OpenDuration),
		Probes:              c.HalfOpenProbes,
	}
	if b.FailureRatio == 0 {
		b.FailureRatio = -1
	}
	if b.ConsecutiveFailures == 0 {
		b.ConsecutiveFailures = -1
	}
	return b, false
}

// storeParams maps [redis] onto the store of the global quotas. What the
// section does not set (the heartbeat, the backoff) keeps limits/redis's
// defaults; each group's quota is mapped by gate.RedisRate.
func storeParams(r *configs.Redis) redis.StoreParams {
	p := redis.StoreParams{
		Address:          r.Address,
		ClusterAddresses: r.ClusterAddresses,
		Username:         r.Username,
		PasswordFile:     r.PasswordFile,
		DB:               r.DB,
		CAFile:           r.CAFile,
		Timeout:          time.Duration(r.Timeout),
		Fallback:         r.Fallback,
		Nodes:            r.Nodes,
		KeyPrefix:        r.KeyPrefix,
	}
	p.SentinelAddresses, p.MasterName, p.SentinelPasswordFile = r.SentinelAddresses, r.MasterName, r.SentinelPasswordFile
	if r.TLS {
		p.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return p
}

// samplerParams returns the resource sampler's parameters for cfg's [probe]:
// the PID in probe.pid_file is read now.
func samplerParams(cfg *configs.Config) (probe.SamplerParams, error) {
	p := probe.SamplerParams{Root: cfg.Probe.Root, Cgroup: cfg.Probe.Cgroup, Host: cfg.Probe.Source == configs.ProbeSourceHost}
	if cfg.Probe.PIDFile == "" {
		return p, nil
	}
	b, err := os.ReadFile(cfg.Probe.PIDFile)
	if err != nil {
		return p, fmt.Errorf("probe.pid_file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return p, fmt.Errorf("probe.pid_file %s: want a process ID, got %q", cfg.Probe.PIDFile, strings.TrimSpace(string(b)))
	}
	p.PID = pid
	return p, nil
}

// splitAddress returns the network and address of a listen address or an
// upstream URL: "unix:///path" is a unix socket, "http://h[:p]" and
// "https://h[:p]" are TCP (ports 80 and 443 by default), "host:port" is TCP.
func splitAddress(s string) (network, addr string, err error) {
	if rest, ok := strings.CutPrefix(s, "unix://"); ok {
		return "unix", rest, nil
	}
	if !strings.Contains(s, "://") {
		return "tcp", s, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", "", err
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return "tcp", net.JoinHostPort(u.Hostname(), port), nil
}

// listen opens the listener for [server] listen: TCP, or a unix socket
// bound with ilisten.DefaultSocketMode from its first instant (owner and
// group may connect; never the process umask, never a chmod after the bind:
// see ilisten.Listen), as the permit and rls sockets are. A socket left
// behind by a process that is gone (nothing accepts on it) is removed and
// bound again; one that another process serves is refused.
func listen(address string) (net.Listener, error) {
	return ilisten.Listen(address, 0)
}

// watchProxy routes what the proxy reports to log: every change of the
// circuit breaker's state at info, and upstream exchanges that failed for
// want of a local resource (the fd limit, say) at warn, at most one line a
// second, which says how many more there were.
func watchProxy(p *proxy.Params, log hclog.Logger) {
	p.Breaker.OnChange = func(c breaker.Change) {
		log.Info("circuit breaker "+c.To.String(), "from", c.From.String(), "reason", c.Reason)
	}
	var local sometimes
	p.OnLocalError = func(err error) {
		if more, ok := local.allow(time.Now(), time.Second); ok {
			log.Warn("upstream exchange failed for want of a local resource; answered 503 (Sluice-Error: local), not counted against the upstream",
				"error", err, "more_since_last", more)
		}
	}
}

// serverListener wraps ln, the listener of [server] listen, for the proxy's
// server: bounded to max_connections (when set), and, for net/http's server,
// guarded against request framing a proxy must refuse (proxy.GuardListener,
// or with tlsConfig proxy.GuardTLSListener, which terminates TLS under the
// guard); sluice's own server (own) reads the framing itself.
// Connections refused beyond the bound are logged at warn, at most one line
// a second.
func serverListener(ln net.Listener, s *configs.Server, tlsConfig *tls.Config, own bool, log hclog.Logger) net.Listener {
	if s.MaxConnections > 0 {
		var refused sometimes
		ln = proxy.LimitListener(ln, proxy.LimitParams{Max: s.MaxConnections, TLS: tlsConfig != nil, OnRefuse: func(max int) {
			if more, ok := refused.allow(time.Now(), time.Second); ok {
				log.Warn("connection refused: server.max_connections reached", "max_connections", max, "more_since_last", more)
			}
		}})
	}
	switch {
	case tlsConfig != nil:
		return proxy.GuardTLSListener(ln, tlsConfig, s.MaxHeaderBytes)
	case own:
		return ln // the own server reads framing with the parser that decides it
	}
	return proxy.GuardListener(ln, s.MaxHeaderBytes)
}

// circuitStatus reads p's circuit breaker for the admin API's /v1/status.
func circuitStatus(p *proxy.Proxy) func() (admin.CircuitStatus, bool) {
	return func() (admin.CircuitStatus, bool) {
		b := p.Breaker()
		if b == nil {
			return admin.CircuitStatus{}, false
		}
		st := b.Status()
		return admin.CircuitStatus{State: st.State.String(), Since: st.Since, Reason: st.Reason}, true
	}
}

// sometimes lets a log line through at most once per period; the one that
// passes learns how many were held back since the last. Safe for concurrent
// use; no lock.
type sometimes struct {
	next atomic.Int64 // Unix nanoseconds before which lines are held back
	held atomic.Uint64
}

// allow reports whether a line may be logged at now, and how many were held
// back before it.
func (s *sometimes) allow(now time.Time, period time.Duration) (held uint64, ok bool) {
	n := s.next.Load()
	if now.UnixNano() < n || !s.next.CompareAndSwap(n, now.Add(period).UnixNano()) {
		s.held.Add(1)
		return 0, false
	}
	return s.held.Swap(0), true
}

package configs

import (
	"github.com/sluicehq/sluice/gate/spec"
	"github.com/sluicehq/sluice/limits"
)

// Config is one sluice configuration: what the daemon listens on, the
// upstream it guards, how it watches that upstream's resources, its admin API,
// its control loop, the optional Redis for global quotas, and the groups of
// requests it limits.
//
// A Config returned by [Load], [Parse] or [Default] has every default filled
// in and has passed [Config.Validate]. A Config built in Go should start from
// [New] and [NewGroup], then call [Config.SetDefaults] and [Config.Validate].
// Field comments give the TOML key, the unit, the default and what zero means.
//
// A Config is a plain value: safe to read from many goroutines, not to
// mutate while others read it. To change one at runtime, change a copy
// ([Config.Clone], [Config.ReplaceGroup]) and swap it in.
type Config struct {
	Server   Server   `toml:"server" json:"server"`
	Upstream Upstream `toml:"upstream" json:"upstream"`
	Probe    Probe    `toml:"probe" json:"probe"`
	Admin    Admin    `toml:"admin" json:"admin"`
	Control  Control  `toml:"control" json:"control"`
	// Redis holds the shared quotas of groups whose rate has scope "global";
	// nil when the file has no [redis] section.
	Redis *Redis `toml:"redis,omitempty" json:"redis,omitempty"`
	// Permit is the permit service; nil when the file has no [permit]
	// section.
	Permit *Permit `toml:"permit,omitempty" json:"permit,omitempty"`
	// RLS is Envoy's rate limit service; nil when the file has no [rls]
	// section.
	RLS *RLS `toml:"rls,omitempty" json:"rls,omitempty"`
	// Groups are tried in order; the first whose Match accepts a request
	// takes it. After SetDefaults the last group always matches every
	// request: if the file's last group does not, a group named "default"
	// with default settings is appended ([Config.SetDefaults]).
	Groups []spec.Group `toml:"group" json:"groups"`

	src *source // the file this config was read from; nil when built in Go
}

// Server is the [server] section: the listener clients connect to.
type Server struct {
	// Listen is "host:port" or "unix:///path.sock". Default "127.0.0.1:8080".
	Listen string `toml:"listen" json:"listen"`
	// TLSCert and TLSKey are PEM files for TLS on the listener; both or
	// neither. Default: none (plain HTTP, and h2c if H2C). With TLS, HTTP/2
	// and HTTP/1.1 are offered by ALPN, TLS 1.2 is the least version, and its
	// cipher suites are the ECDHE AEAD ones HTTP/2 permits; request framing is
	// checked under the TLS as over plain TCP.
	TLSCert string `toml:"tls_cert" json:"tls_cert"`
	TLSKey  string `toml:"tls_key" json:"tls_key"`
	// H2C accepts HTTP/2 without TLS (prior knowledge), which gRPC clients
	// use on plain connections. Ignored with TLS, where HTTP/2 is negotiated.
	// Default true.
	H2C bool `toml:"h2c" json:"h2c"`
	// ReadHeaderTimeout bounds how long a client may take to send the
	// request headers (slowloris). Must be positive. Default 10s.
	ReadHeaderTimeout Duration `toml:"read_header_timeout" json:"read_header_timeout"`
	// ReadTimeout bounds reading a whole request, body included; 0 means
	// none. Leave it 0 if clients stream request bodies (gRPC client
	// streaming, uploads). Default 0.
	ReadTimeout Duration `toml:"read_timeout" json:"read_timeout"`
	// WriteTimeout bounds writing a whole response; 0 means none. Leave it 0
	// for streaming responses (gRPC server streaming, SSE, long polls): it
	// would cut them off. Default 0.
	WriteTimeout Duration `toml:"write_timeout" json:"write_timeout"`
	// IdleTimeout closes keep-alive connections idle this long; 0 means
	// none. Default 2m.
	IdleTimeout Duration `toml:"idle_timeout" json:"idle_timeout"`
	// MaxHeaderBytes bounds the request line and headers, in bytes, from 4 KiB
	// to 64 MiB. Default 1 MiB.
	MaxHeaderBytes int `toml:"max_header_bytes" json:"max_header_bytes"`
	// ShutdownGrace is how long SIGTERM waits for requests in flight before
	// closing connections; 0 closes at once. Default 30s.
	ShutdownGrace Duration `toml:"shutdown_grace" json:"shutdown_grace"`
	// TrustedProxies are the peers whose forwarding fields are believed: CIDR
	// prefixes ("10.0.0.0/8", "fd00::/8"), single addresses ("192.0.2.7"),
	// and "unix" for clients of a unix-socket listener (they have no
	// address). From a trusted peer, X-Forwarded-For is passed on with the
	// peer's address appended, and X-Forwarded-Proto, X-Forwarded-Host,
	// Forwarded and X-Real-IP are kept. From any other peer they are
	// replaced: X-Forwarded-For is the peer's address alone,
	// X-Forwarded-Proto the scheme it connected with, X-Forwarded-Host only
	// set when sluice rewrites Host, Forwarded and X-Real-IP are dropped.
	// (Their names spelled with underscores are always dropped.) Key "ip"
	// is the right-most X-Forwarded-For address not in this set, walking
	// from the peer (the peer itself when it is not trusted). Default: none,
	// which trusts nobody.
	TrustedProxies []string `toml:"trusted_proxies" json:"trusted_proxies"`
	// MaxConnections bounds the client connections open at once, from 0 to
	// 10000000; 0 means no limit. A connection beyond it is accepted and
	// answered at once with 503, Connection: close, Retry-After: 1 and
	// Sluice-Error: max_connections (over TLS it is closed at once), then
	// closed: an answer a client can act on, where a connection left in the
	// kernel's backlog would only time out. Keep it below the file
	// descriptor limit (ulimit -n), which each connection to a client and to
	// the upstream takes one of. Default 0.
	MaxConnections int `toml:"max_connections" json:"max_connections"`
	// HTTP1 is what serves HTTP/1.1 on a plain-text listener: "sluice", its
	// own server on the proxy's one request parser (the framing is decided
	// once, a refusal costs no allocation), or "net/http", Go's server behind
	// the framing guard, as before (an escape hatch for a release). Over TLS,
	// with read_timeout or write_timeout set, or with upstream.protocol =
	// "h2c", net/http's serves whatever this says; h2c clients are net/http's
	// either way. Default "sluice".
	HTTP1 HTTP1Server `toml:"http1" json:"http1"`
}

// HTTP1Server names what serves HTTP/1.1 (Server.HTTP1).
type HTTP1Server string

// What may serve HTTP/1.1.
const (
	// HTTP1Sluice is sluice's own server (proxy.H1Server).
	HTTP1Sluice HTTP1Server = "sluice"
	// HTTP1NetHTTP is net/http's server behind the framing guard.
	HTTP1NetHTTP HTTP1Server = "net/http"
)

// OwnHTTP1 reports whether c's HTTP/1.1 is served by sluice's own server:
// asked for, on plain text, without the whole-request timeouts that only
// net/http's server has, in front of an upstream that speaks HTTP/1.1.
func (c *Config) OwnHTTP1() bool {
	s := &c.Server
	return s.HTTP1 == HTTP1Sluice && s.TLSCert == "" && s.ReadTimeout == 0 && s.WriteTimeout == 0 &&
		c.Upstream.Protocol != ProtocolH2C
}

// Upstream is the [upstream] section: the service sluice guards.
type Upstream struct {
	// URL is "http://host:port", "https://host:port" or
	// "unix:///path.sock", without a path. Required.
	URL string `toml:"url" json:"url"`
	// Protocol is how sluice talks to the upstream. Default "auto".
	Protocol Protocol `toml:"protocol" json:"protocol"`
	// DialTimeout bounds opening a connection to the upstream. Must be
	// positive. Default 2s.
	DialTimeout Duration `toml:"dial_timeout" json:"dial_timeout"`
	// ResponseHeaderTimeout bounds how long the upstream may take to make
	// progress: the wait for its response headers after the request is
	// sent, and each wait between reads of its response body (as nginx's
	// proxy_read_timeout: a slow stream that keeps sending lives on; gRPC
	// calls are bounded by their own deadline instead); 0 means none. A
	// request that times out is a drop: the strongest overload signal. It is
	// the proxy's UpstreamTimeout (proxy.Params). Default 30s.
	ResponseHeaderTimeout Duration `toml:"response_header_timeout" json:"response_header_timeout"`
	// IdleConnTimeout closes idle upstream connections; 0 means none.
	// Default 90s.
	IdleConnTimeout Duration `toml:"idle_conn_timeout" json:"idle_conn_timeout"`
	// MaxIdleConnsPerHost is how many idle connections to keep open to the
	// upstream, from 1 to 100000. Go's default of 2 makes a busy proxy open
	// and close connections all day. Default 256.
	MaxIdleConnsPerHost int `toml:"max_idle_conns_per_host" json:"max_idle_conns_per_host"`
	// CAFile is a PEM bundle trusted for an https upstream instead of the
	// system roots. Default: the system roots.
	CAFile string `toml:"ca_file" json:"ca_file"`
	// Circuit is the upstream's circuit breaker.
	Circuit Circuit `toml:"circuit" json:"circuit"`
}

// Circuit is the [upstream.circuit] section: a circuit breaker on upstream
// failures (refused or reset connections, timeouts, malformed responses,
// 5xx, and for gRPC the overload and server-fault statuses). There is one per
// upstream, for every group: a dead upstream fails all of them alike.
//
// Closed, it counts finished requests over Window and opens when
// ConsecutiveFailures fail in a row or when, once Window holds MinRequests,
// FailureRatio of them failed. Open, it answers every request at once with
// 503 and reason "circuit_open" (counted in the request's group) for
// OpenDuration; then it lets HalfOpenProbes requests through and closes once
// they all succeeded, or opens again at the first that fails. Set both
// FailureRatio and ConsecutiveFailures to 0 to turn the breaker off.
type Circuit struct {
	// FailureRatio opens the circuit when at least this share of the
	// requests in Window failed, a ratio in [0, 1]; 0 is off. Default 0.5.
	FailureRatio float64 `toml:"failure_ratio" json:"failure_ratio"`
	// MinRequests is how many requests Window must hold before
	// FailureRatio is judged, from 1 to 1e6. Default 20.
	MinRequests int `toml:"min_requests" json:"min_requests"`
	// Window is the rolling window of FailureRatio, from 1ms to 1h.
	// Default 10s.
	Window Duration `toml:"window" json:"window"`
	// ConsecutiveFailures opens the circuit after this many failures in a
	// row; 0 is off. Default 5.
	ConsecutiveFailures int `toml:"consecutive_failures" json:"consecutive_failures"`
	// OpenDuration is how long the circuit stays open before probing, from
	// 1ms to 1h. Default 5s.
	OpenDuration Duration `toml:"open_duration" json:"open_duration"`
	// HalfOpenProbes is how many requests are let through to probe, from 1
	// to 1000; all must succeed to close the circuit. Default 3.
	HalfOpenProbes int `toml:"half_open_probes" json:"half_open_probes"`
}

// Off reports whether the breaker is turned off: neither trigger is set.
func (c *Circuit) Off() bool { return c.FailureRatio == 0 && c.ConsecutiveFailures == 0 }

// Protocol is how sluice speaks to the upstream.
type Protocol string

// Protocols.
const (
	// ProtocolAuto forwards a request in the protocol it arrived in:
	// HTTP/2 requests (gRPC) over HTTP/2 (h2c for http://, ALPN for
	// https://), HTTP/1.x requests over HTTP/1.1.
	ProtocolAuto Protocol = "auto"
	// ProtocolHTTP1 always uses HTTP/1.1.
	ProtocolHTTP1 Protocol = "http1"
	// ProtocolH2C always uses HTTP/2 without TLS (prior knowledge); for
	// http:// and unix:// upstreams that only speak HTTP/2, such as gRPC
	// servers.
	ProtocolH2C Protocol = "h2c"
)

// Probe is the [probe] section: whose CPU, memory and CPU pressure the
// targets refer to. They are the guarded workload's: the cgroup named by
// Cgroup; else the process named by PIDFile (its nearest cgroup with a limit,
// else its own CPU and RSS); else the nearest cgroup around sluice that
// carries a limit (in Kubernetes, the pod's). The host's only with Source
// "host". A target whose signal has no source is switched off, and the
// startup log says why.
type Probe struct {
	// Source is "auto" (the guarded workload, as above) or "host" (the
	// whole machine: /proc/stat, /proc/meminfo and /proc/pressure/cpu;
	// neither Cgroup nor PIDFile then). Default "auto".
	Source ProbeSource `toml:"source" json:"source"`
	// Cgroup is an absolute cgroup directory to watch, such as
	// "/sys/fs/cgroup/app.slice" (cgroup v1: its directory in any one
	// hierarchy, such as "/sys/fs/cgroup/memory/app"). Its own limits are
	// used, not its ancestors'. Default: none.
	Cgroup string `toml:"cgroup" json:"cgroup"`
	// PIDFile names a file holding the service's PID; sluice watches that
	// process. Not together with Cgroup.
	PIDFile string `toml:"pid_file" json:"pid_file"`
	// Root is the absolute directory under which /proc and /sys are read;
	// tests point it at a fake tree. Default "/".
	Root string `toml:"root" json:"root"`
}

// ProbeSource is where [probe] reads the guarded signals.
type ProbeSource string

// Probe sources.
const (
	// ProbeSourceAuto reads the guarded workload: a cgroup, a process, the
	// nearest cgroup with a limit; never the host.
	ProbeSourceAuto ProbeSource = "auto"
	// ProbeSourceHost reads the whole host, whose load a concurrency limit
	// may not move (a neighbour's): only on the operator's word.
	ProbeSourceHost ProbeSource = "host"
)

// Admin is the [admin] section: the admin HTTP API, metrics and dashboard.
type Admin struct {
	// Listen is "host:port" or "unix:///path.sock"; "" turns the admin API
	// off. Off loopback (and not a unix socket) it requires TokenFile.
	// Default "127.0.0.1:9901" (DefaultAdminListen).
	Listen string `toml:"listen" json:"listen"`
	// TokenFile holds the bearer token that mutations need (and every
	// request, off loopback). Default: none, which makes the API read-only.
	TokenFile string `toml:"token_file" json:"token_file"`
}

// Control is the [control] section: the control loop.
type Control struct {
	// Interval is how often the control loop samples and adjusts limits,
	// from 10ms to 1m. Default 250ms.
	Interval Duration `toml:"interval" json:"interval"`
	// StateFile is where learned limits are saved, so a restart does not
	// start cold; "" saves nothing. Default "".
	StateFile string `toml:"state_file" json:"state_file"`
	// SaveInterval is how often the state file is written, at least
	// Interval. Default 30s.
	SaveInterval Duration `toml:"save_interval" json:"save_interval"`
	// StateMaxAge is the oldest a state file may be and still be restored
	// at startup, from save_interval to 8760h (a year): limits learned
	// longer ago describe a service that may have changed since, so the
	// groups start from their initial limits instead (and the startup log
	// says why). Default 24h.
	StateMaxAge Duration `toml:"state_max_age" json:"state_max_age"`
}

// Redis is the [redis] section: the store of global quotas (rate scope
// "global"). Each node keeps its own adaptive concurrency limit; only rate
// quotas are shared.
type Redis struct {
	// Address is one Redis server, "host:port". Set one of Address,
	// ClusterAddresses and SentinelAddresses.
	Address string `toml:"address,omitempty" json:"address,omitempty"`
	// ClusterAddresses are seed nodes of a Redis Cluster, "host:port" each.
	ClusterAddresses []string `toml:"cluster_addresses,omitempty" json:"cluster_addresses,omitempty"`
	// SentinelAddresses are Redis Sentinels watching the master named
	// MasterName, "host:port" each: sluice asks them where the master is
	// and follows a failover to the replica they promote.
	SentinelAddresses []string `toml:"sentinel_addresses,omitempty" json:"sentinel_addresses,omitempty"`
	// MasterName is the master's name in the sentinels' configuration;
	// required with SentinelAddresses.
	MasterName string `toml:"master_name,omitempty" json:"master_name,omitempty"`
	// SentinelPasswordFile holds the sentinels' own password (their
	// requirepass, one line), which sluice sends to the sentinels only; the
	// master's is PasswordFile. "" means the sentinels ask none. Only with
	// SentinelAddresses.
	SentinelPasswordFile string `toml:"sentinel_password_file,omitempty" json:"sentinel_password_file,omitempty"`
	// Username is the ACL user; "" is the default user.
	Username string `toml:"username" json:"username"`
	// PasswordFile holds the password of the server, the cluster's nodes or
	// the master (one line); "" means none.
	PasswordFile string `toml:"password_file" json:"password_file"`
	// DB is the database number, at least 0; a cluster has only 0.
	// Default 0.
	DB int `toml:"db" json:"db"`
	// TLS connects with TLS. Default false.
	TLS bool `toml:"tls" json:"tls"`
	// CAFile is a PEM bundle trusted instead of the system roots; needs TLS.
	CAFile string `toml:"ca_file" json:"ca_file"`
	// Timeout bounds one quota decision, from 1ms to 1s. A decision that
	// times out follows Fallback. Default 5ms.
	Timeout Duration `toml:"timeout" json:"timeout"`
	// Fallback is what a global quota does while Redis is unreachable or
	// slow. Default "local".
	Fallback limits.Fallback `toml:"fallback" json:"fallback"`
	// Nodes is how many sluice nodes share the global quotas, from 1 to
	// 10000; the "local" fallback gives each node limit / Nodes. Default 1.
	Nodes int `toml:"nodes" json:"nodes"`
	// KeyPrefix starts every key sluice writes, so several deployments can
	// share one Redis. Default "sluice:".
	KeyPrefix string `toml:"key_prefix" json:"key_prefix"`
}

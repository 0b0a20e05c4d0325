package admin

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sluicehq/sluice/admin/api"
	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/gate/spec"
	"github.com/sluicehq/sluice/internal/listen"
)

// Gate is what the admin API reads and steers. *gate.Gate satisfies it.
type Gate interface {
	Status() gate.Status
	Groups() []gate.GroupStatus
	Group(name string) (gate.GroupStatus, bool)
	Config() gate.Config
	Override(c gate.Group) error
	Reload(cfg gate.Config, o gate.ReloadOptions) (gate.ReloadResult, error)
}

// DefaultListen is where the admin API listens when Params.Listen is empty:
// admin.listen's default.
const DefaultListen = configs.DefaultAdminListen

// Defaults of Params.
const (
	DefaultMaxBodyBytes    = 64 << 10
	DefaultHistoryInterval = time.Second
	DefaultHistoryLength   = 600 // ten minutes at one point a second
)

// Params configures a Server. Gate is required; the zero value of every other
// field means its default.
type Params struct {
	// Gate is the gate to read and steer.
	Gate Gate
	// Config is the configuration the gate was built from (its Gate()
	// conversion), as loaded: the API shows the groups the gate runs in its
	// terms, and checks a PATCH against it as the file is checked. Reloads
	// through the Server replace it. Required.
	Config *configs.Config

	// Listen is "host:port" or "unix:///path.sock", as admin.listen.
	// Default DefaultListen.
	Listen string
	// Token is the bearer token (ReadTokenFile reads admin.token_file).
	// Empty: the API is read-only, which New refuses off loopback.
	Token string
	// Hosts are more names the Host header may carry off loopback (a DNS
	// name that points at this machine), for the DNS-rebinding guard.
	Hosts []string

	// Version is the daemon's version, for /v1/status and sluice_build_info.
	Version string
	// Revision is the VCS revision the daemon was built from, for
	// sluice_build_info; "" is "unknown".
	Revision string
	// Load reads the configuration a reload applies (the daemon's config
	// file, parsed and validated). Nil: reloads answer 501.
	Load func(ctx context.Context) (*configs.Config, error)
	// OnReload, if set, is called after every reload attempt through the
	// Server (POST /v1/reload, Server.Reload), for logs.
	OnReload func(ReloadReport, error)
	// OnChange, if set, is called after every runtime change made through
	// the admin API but reloads (a PATCH of a group or of its global quota,
	// the removal of a global quota's definition), for logs. It is called
	// with the Server's mutations serialised, so changes arrive in order.
	OnChange func(Change)
	// Ready reports whether the daemon may take traffic: nil once the
	// upstream has answered and the config is valid, else why not. Nil means
	// always ready.
	Ready func() error
	// Circuit reports the upstream's circuit breaker for /v1/status; nil,
	// or false, when there is none. Safe for concurrent use.
	Circuit func() (CircuitStatus, bool)
	// Fronts, if set, returns the front-ends beside the proxy for
	// /v1/status. Nil: none. Safe for concurrent use.
	Fronts func() []FrontStatus

	// Metrics are the per-request histograms the gate feeds (pass the same
	// value to gate.Params.Observer). Nil: no histograms are exported.
	Metrics *Metrics
	// Registry is where the metrics are registered and gathered from for
	// /metrics. Nil: a new registry with the Go and process collectors.
	Registry *prometheus.Registry

	// HistoryInterval is how often the history behind the dashboard is
	// sampled, and HistoryLength how many points it keeps per group.
	// Defaults 1s and 600.
	HistoryInterval time.Duration
	HistoryLength   int
	// MaxBodyBytes bounds a request body. Default 64 KiB.
	MaxBodyBytes int64
	// ErrorLog receives the HTTP server's own errors (failed accepts, bad
	// TLS handshakes, handler panics), as http.Server.ErrorLog: hclog's
	// StandardLogger fits. Nil: the log package's standard logger.
	ErrorLog *log.Logger
	// Now is the clock of uptime and history. Default time.Now.
	Now func() time.Time
}

// ErrNoToken is returned by New and Serve for a listener that other machines
// can reach when no token is set.
var ErrNoToken = errors.New("admin: refusing to serve off loopback without a token: set admin.token_file, or listen on loopback")

// Server is the admin HTTP server. Build it with New; it is safe for
// concurrent use.
type Server struct {
	p        Params
	gate     Gate
	reach    listen.Reach
	token    tokenDigest // zero: none
	hosts    hostSet
	reg      *prometheus.Registry
	history  *history
	reloads  *prometheus.CounterVec
	handler  http.Handler
	srv      *http.Server
	started  time.Time
	serving  atomic.Bool
	addr     atomic.Pointer[net.Addr] // bound by Listen or Serve
	stopHist context.CancelFunc
	histDone chan struct{}

	// file is the config the gate runs, as loaded (overrides aside): its
	// sections beyond the groups, and the context a PATCH is checked in.
	file atomic.Pointer[configs.Config]

	// refused is the last reload refused, for /v1/status; nil while none
	// was.
	refused atomic.Pointer[api.RefusedReload]

	// mu serialises the mutations (PATCH, reload) and guards keep.
	mu   sync.Mutex
	keep map[string]bool // groups whose override survives reloads
}

// config is the configuration in force in configs' terms: the file's
// sections with the groups as the gate runs them, overrides included.
func (s *Server) config() *configs.Config {
	c := s.file.Load().Clone()
	gc := s.gate.Config()
	c.Groups = make([]spec.Group, len(gc.Groups))
	for i := range gc.Groups {
		c.Groups[i] = gc.Groups[i].Clone()
	}
	return c
}

// groupConfig is the group called name as the gate runs it, in configs'
// terms; nil when there is none.
func (s *Server) groupConfig(name string) *spec.Group {
	g := s.gate.Config().Group(name)
	if g == nil {
		return nil
	}
	c := g.Clone()
	return &c
}

// New builds a Server from p. It does not listen: call ListenAndServe, or
// Listen then Serve. It returns ErrNoToken when p.Listen is reachable from
// other machines (not loopback, not a unix socket) and p.Token is empty.
func New(p Params) (*Server, error) {
	if p.Gate == nil {
		return nil, errors.New("admin: no gate")
	}
	if p.Config == nil {
		return nil, errors.New("admin: no config (Params.Config)")
	}
	if p.Listen == "" {
		p.Listen = DefaultListen
	}
	if p.MaxBodyBytes <= 0 {
		p.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if p.HistoryInterval <= 0 {
		p.HistoryInterval = DefaultHistoryInterval
	}
	if p.HistoryLength <= 0 {
		p.HistoryLength = DefaultHistoryLength
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	reach, err := listen.Of(p.Listen)
	if err != nil {
		return nil, fmt.Errorf("admin: %w", err)
	}
	if reach == listen.Open && p.Token == "" {
		return nil, fmt.Errorf("%w (listen %q)", ErrNoToken, p.Listen)
	}
	s := &Server{
		p:       p,
		gate:    p.Gate,
		reach:   reach,
		hosts:   newHostSet(p.Listen, p.Hosts, reach),
		reg:     p.Registry,
		history: newHistory(p.HistoryLength),
		started: p.Now(),
		keep:    map[string]bool{},
	}
	s.file.Store(p.Config)
	if p.Token != "" {
		s.token = digest(p.Token)
	}
	if s.reg == nil {
		s.reg = prometheus.NewRegistry()
		s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	s.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_config_reloads_total",
		Help: "Config reloads through the admin server (POST /v1/reload, SIGHUP), by result: success or failure.",
	}, []string{"result"})
	s.reloads.WithLabelValues("success")
	s.reloads.WithLabelValues("failure")
	cs := []prometheus.Collector{newGateCollector(p.Gate, p.Version, p.Revision), s.reloads}
	if p.Metrics != nil {
		cs = append(cs, p.Metrics)
	}
	for _, c := range cs {
		if err := s.reg.Register(c); err != nil {
			return nil, fmt.Errorf("admin: registering metrics: %w", err)
		}
	}
	s.handler = s.routes()
	s.srv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		// No WriteTimeout: /debug/pprof/profile and /trace stream for as long
		// as asked (?seconds=N).
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       p.ErrorLog,
	}
	return s, nil
}

// Handler returns the admin API's handler, security checks included. Serve
// uses it; a caller that serves it on a listener of its own must also run
// the history sampler (Serve does) for the dashboard to have a history.
func (s *Server) Handler() http.Handler { return s.handler }

// Registry returns the registry /metrics gathers from.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// Listen opens Params.Listen: a TCP address or a unix socket (created mode
// 0660, after removing a stale socket file that nothing listens on).
func (s *Server) Listen() (net.Listener, error) {
	ln, err := listen.Listen(s.p.Listen, 0)
	if err != nil {
		return nil, fmt.Errorf("admin: listen: %w", err)
	}
	a := ln.Addr()
	s.addr.Store(&a)
	return ln, nil
}

// Serve serves the admin API on ln until Shutdown, and samples the history
// meanwhile. It returns http.ErrServerClosed after Shutdown, like
// http.Server.Serve, or ErrNoToken (closing ln) when ln is reachable from
// other machines and no token is set, whatever Params.Listen said. It may be
// called once.
func (s *Server) Serve(ln net.Listener) error {
	if !s.serving.CompareAndSwap(false, true) {
		ln.Close()
		return errors.New("admin: Serve called twice")
	}
	if listen.OfAddr(ln.Addr()) == listen.Open && s.p.Token == "" {
		ln.Close()
		return fmt.Errorf("%w (bound to %s)", ErrNoToken, ln.Addr())
	}
	a := ln.Addr()
	s.addr.Store(&a)
	s.startHistory()
	defer s.stopHistory()
	return s.srv.Serve(listen.Limit(ln, MaxConns))
}

// MaxConns bounds the connections the admin API serves at once: far beyond
// a few scrapers, dashboards and operators; one more is closed at once.
const MaxConns = 256

// Addr returns the address of the listener that Listen opened or Serve was
// given, nil before: with port 0 in Params.Listen, the port the system chose.
func (s *Server) Addr() net.Addr {
	if a := s.addr.Load(); a != nil {
		return *a
	}
	return nil
}

// ListenAndServe is Listen, then Serve.
func (s *Server) ListenAndServe() error {
	ln, err := s.Listen()
	if err != nil {
		return err
	}
	return s.Serve(ln)
}

// Shutdown stops the history sampler and shuts the HTTP server down
// gracefully (http.Server.Shutdown): no new connections, in-flight requests
// finish until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopHistory()
	return s.srv.Shutdown(ctx)
}

// startHistory takes the history's first point, then starts the sampler,
// the Server's one goroutine, for the others. The first point is taken
// before Serve serves: a page or a client that asks at once finds it.
func (s *Server) startHistory() {
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	s.stopHist, s.histDone = cancel, make(chan struct{})
	done := s.histDone
	s.mu.Unlock()
	s.history.sample(s.p.Now(), s.gate)
	go func() {
		defer close(done)
		tk := time.NewTicker(s.p.HistoryInterval)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
				s.history.sample(s.p.Now(), s.gate)
			}
		}
	}()
}

func (s *Server) stopHistory() {
	s.mu.Lock()
	cancel, done := s.stopHist, s.histDone
	s.stopHist, s.histDone = nil, nil
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

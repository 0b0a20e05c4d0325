package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/admin"
	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/gate/redisrate"
	"github.com/sluicehq/sluice/limits/redis"
	"github.com/sluicehq/sluice/probe"
	"github.com/sluicehq/sluice/proxy"
)

// daemon is a running sluice: the gate (admission and the control loop), the
// proxy in front of the upstream, the HTTP server that feeds it, the
// resource sampler, the admin API (when admin.listen is set), and the Redis
// store of the global quotas (when [redis] is). Its goroutines are started by
// start and stopped by stop, and nowhere else.
type daemon struct {
	path string // the config file; "" when running the embedded default
	log  hclog.Logger

	// started is the config the daemon started with: the sections that only a
	// restart can change (server, upstream, probe, admin, redis, the state
	// file) stay as they are in it, whatever a reload brings.
	started *configs.Config

	sampler *probe.Sampler
	store   *redis.Store // nil without [redis]
	gate    *gate.Gate
	proxy   *proxy.Proxy
	server  proxyServer
	ln      net.Listener

	admin   *admin.Server // nil when admin.listen is ""
	adminLn net.Listener

	fronts // the permit service and Envoy's rate limit service, when configured

	reloadMu sync.Mutex  // one reload at a time (SIGHUP and the admin API)
	answered atomic.Bool // the upstream accepted a probe or answered a request
	draining atomic.Bool // shutting down: no longer ready

	wg      sync.WaitGroup
	stopCtl context.CancelFunc // ends the control loop and the upstream probe
	ctlErr  error              // the control loop's last state save; read after wg.Wait
	failed  chan error         // the server stopped serving on its own
}

// newDaemon builds every part for cfg and opens the listener; nothing runs
// until start. What it opened is closed again when it fails.
func newDaemon(path string, cfg *configs.Config, log hclog.Logger) (*daemon, error) {
	d := &daemon{path: path, log: log, started: cfg, failed: make(chan error, 1)}
	if err := d.build(); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// build makes the parts of d for d.started.
func (d *daemon) build() error {
	cfg := d.started
	sp, err := samplerParams(cfg)
	if err != nil {
		return err
	}
	if d.sampler, err = probe.NewSampler(sp); err != nil {
		return err
	}

	// The metrics exist only where the admin API serves them; without it the
	// gate observes nothing per request.
	var metrics *admin.Metrics
	if cfg.Admin.Listen != "" {
		metrics = admin.NewMetrics(admin.MetricsParams{})
	}
	if err := d.buildGate(metrics); err != nil {
		return err
	}
	if err := d.buildServer(); err != nil {
		return err
	}
	if err := checkFronts(cfg); err != nil {
		return err
	}
	if err := d.buildFronts(); err != nil {
		return err
	}
	if metrics != nil {
		return d.buildAdmin(metrics)
	}
	return nil
}

// buildGate makes d's gate (and the Redis store of its global quotas) for
// d.started, observed by metrics (nil: none).
func (d *daemon) buildGate(metrics *admin.Metrics) error {
	cfg, path, log := d.started, d.path, d.log
	var err error
	ctl := log.Named("control")
	source := path
	if source == "" {
		source = "embedded default"
	}
	gp := gate.Params{
		Config:       cfg.Gate(),
		ConfigSource: source,
		ConfigHash:   cfg.Hash(),
		StateFile:    cfg.Control.StateFile,
		StateMaxAge:  time.Duration(cfg.Control.StateMaxAge),
		Resources:    d.sampler,
		OnChange: func(c gate.Change) {
			ctl.Debug("limit changed", "group", c.Group, "from", c.From, "to", c.To,
				"rate_from", c.RateFrom, "rate", c.Rate, "reason", c.Reason)
			metrics.ObserveChange(c)
		},
		OnUnmoved: func(c gate.UnmovedChange) {
			if added := c.Now &^ c.Before; added != 0 {
				ctl.Warn("target ignored: cutting the limit does not move it", "group", c.Group,
					"targets", added.String(), "reason", c.Reason)
			}
			if back := c.Before &^ c.Now; back != 0 {
				ctl.Info("target acted on again", "group", c.Group, "targets", back.String())
			}
		},
		OnSave: func(path string, err error) {
			if err != nil {
				ctl.Warn("state file not saved", "path", path, "error", err)
			} else {
				ctl.Trace("state file saved", "path", path)
			}
			metrics.ObserveSave(path, err)
		},
	}
	if metrics != nil {
		gp.Observer = metrics // a nil *Metrics in the interface would still be called
	}
	if cfg.Redis != nil {
		// The store does not contact Redis here: the daemon starts, and its
		// global quotas decide by their fallback, while Redis is down.
		goredis.SetLogger(&redisLog{log: log.Named("redis"), repeatAfter: time.Minute})
		if d.store, err = redis.Open(storeParams(cfg.Redis)); err != nil {
			return fmt.Errorf("redis: %w", err)
		}
		gp.GlobalRate = redisrate.New(d.store)
	}
	d.gate, err = gate.New(gp)
	return err
}

// buildServer makes d's proxy in front of its gate, the server that serves
// it, and opens the server's listener.
func (d *daemon) buildServer() error {
	cfg, log := d.started, d.log
	var err error
	pp := proxyParams(cfg)
	pp.Gate = d.gate
	watchProxy(&pp, log.Named("upstream"))
	if d.proxy, err = proxy.New(pp); err != nil {
		return err
	}
	s := &cfg.Server
	var tlsConfig *tls.Config
	if s.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(s.TLSCert, s.TLSKey)
		if err != nil {
			return fmt.Errorf("server.tls_cert, server.tls_key: %w", err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	srvParams := proxy.ServerParams{
		TLS:               tlsConfig != nil,
		Handler:           d.proxy,
		ReadHeaderTimeout: time.Duration(s.ReadHeaderTimeout),
		MaxHeaderBytes:    s.MaxHeaderBytes,
		DisableH2C:        !s.H2C,
		ErrorLog:          log.Named("proxy").StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Warn}),
	}
	own := cfg.OwnHTTP1()
	if own {
		own, err := proxy.NewH1Server(d.proxy, srvParams)
		if err != nil {
			return err
		}
		own.SetIdleTimeout(time.Duration(s.IdleTimeout))
		d.server = own
	} else {
		hs, err := proxy.NewServer(srvParams)
		if err != nil {
			return err
		}
		// configs' zero is "none" for these; net/http's zero is "none" too.
		hs.IdleTimeout = time.Duration(s.IdleTimeout)
		hs.ReadTimeout = time.Duration(s.ReadTimeout)
		hs.WriteTimeout = time.Duration(s.WriteTimeout)
		d.server = hs
	}

	if d.ln, err = listen(s.Listen); err != nil {
		return fmt.Errorf("server.listen %s: %w", s.Listen, err)
	}
	d.ln = serverListener(d.ln, s, tlsConfig, own, log.Named("server"))
	return nil
}

// buildAdmin makes the admin API for d.started and opens its listener.
func (d *daemon) buildAdmin(metrics *admin.Metrics) error {
	a := &d.started.Admin
	var token string
	if a.TokenFile != "" {
		var err error
		if token, err = admin.ReadTokenFile(a.TokenFile); err != nil {
			return fmt.Errorf("admin.token_file: %w", err)
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		prometheus.NewGoCollector(),
		prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}),
		upstreamCollector{d.proxy},
		frontCollector{d.permit, d.rls},
	)
	log := d.log.Named("admin")
	var err error
	d.admin, err = admin.New(admin.Params{
		Gate:     d.gate,
		Config:   d.started,
		Listen:   a.Listen,
		Token:    token,
		Version:  version,
		Revision: revision(),
		Load:     d.loadNext,
		OnReload: d.logReload,
		OnChange: d.logChange,
		Ready:    d.ready,
		Circuit:  circuitStatus(d.proxy),
		Fronts:   d.frontStatuses,
		Metrics:  metrics,
		Registry: reg,
		ErrorLog: log.StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Warn}),
	})
	if err != nil {
		return fmt.Errorf("admin: %w", err)
	}
	if d.adminLn, err = d.admin.Listen(); err != nil {
		return fmt.Errorf("admin.listen %s: %w", a.Listen, err)
	}
	return nil
}

// proxyServer is what serves the proxy's listener: sluice's own HTTP/1.1
// server (proxy.H1Server) or net/http's (server.http1).
type proxyServer interface {
	Serve(net.Listener) error
	Shutdown(context.Context) error
	Close() error
}

// close releases what newDaemon opened, for a daemon that never started.
func (d *daemon) close() {
	if d.ln != nil {
		d.ln.Close()
	}
	if d.adminLn != nil {
		d.adminLn.Close()
	}
	d.closeFronts()
	if d.proxy != nil {
		d.proxy.Close()
	}
	if d.sampler != nil {
		d.sampler.Close()
	}
	if d.store != nil {
		d.store.Close()
	}
}

// serve runs a server's serve on a goroutine of its own: an end other than
// closed (the error it returns once shut down) is the daemon's failure,
// sent on d.failed with name before it ("" sends the error as it is).
func (d *daemon) serve(name string, serve func() error, closed error) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		if err := serve(); !errors.Is(err, closed) {
			if name != "" {
				err = fmt.Errorf("%s: %w", name, err)
			}
			d.failed <- err
		}
	}()
}

// start runs the daemon's goroutines: the server, the control loop, the
// upstream probe and the admin API.
func (d *daemon) start() {
	ctx, cancel := context.WithCancel(context.Background())
	d.stopCtl = cancel
	if d.admin != nil {
		d.serve("admin", func() error { return d.admin.Serve(d.adminLn) }, http.ErrServerClosed)
	}
	d.serve("", func() error { return d.server.Serve(d.ln) }, http.ErrServerClosed)
	d.wg.Add(2)
	go func() {
		defer d.wg.Done()
		d.ctlErr = d.gate.Run(ctx)
	}()
	go func() {
		defer d.wg.Done()
		d.awaitUpstream(ctx)
	}()
	d.startFronts(ctx)
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		t := time.NewTicker(rejectionLogEvery)
		defer t.Stop()
		logRejections(ctx, d.gate, t.C, d.log.Named("rejections"))
	}()
	if d.store != nil {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			watchRedis(ctx, d.store, time.Duration(d.started.Control.Interval), d.log.Named("redis"))
		}()
	}
}

// drained is how a shutdown's drain ended.
type drained struct {
	expired bool // the grace period ran out and connections were closed
	cut     int  // requests in flight or queued when they were
	streams int  // streams still open at the end of the grace period, closed
}

// streamsCloseWait bounds how long the streams closed at the end of the grace
// period (proxy.CloseStreams) have to end.
const streamsCloseWait = 2 * time.Second

// shutdown stops accepting connections and waits, for at most grace, until
// the requests in flight have finished; then it closes every connection left.
// It runs in the background: the result comes on the channel, so a second
// signal can still be heard meanwhile.
func (d *daemon) shutdown(grace time.Duration) <-chan drained {
	d.draining.Store(true)
	out := make(chan drained, 1)
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		frontsDone := make(chan error, 1)
		go func() { frontsDone <- d.shutdownFronts(ctx) }()
		err := d.server.Shutdown(ctx)
		ferr := <-frontsDone
		// Streams get the grace period too (a spliced WebSocket has no
		// handler for Shutdown to wait for); those still open at its end
		// are closed with their protocol's close, and then their handlers
		// end (a gRPC call's).
		streams := 0
		if d.proxy != nil {
			awaitStreams(ctx, d.proxy)
			if d.proxy.OpenStreams() > 0 {
				cctx, ccancel := context.WithTimeout(context.Background(), streamsCloseWait)
				streams = d.proxy.CloseStreams(cctx)
				if err != nil {
					err = d.server.Shutdown(cctx)
				}
				ccancel()
			}
		}
		if err == nil && ferr == nil {
			out <- drained{streams: streams}
			return
		}
		cut := d.pending()
		d.server.Close()
		d.closeFrontServers()
		out <- drained{expired: true, cut: cut, streams: streams}
	}()
	return out
}

// awaitStreams waits until no stream is open through px, or ctx ends.
func awaitStreams(ctx context.Context, px *proxy.Proxy) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for px.OpenStreams() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// stop closes the admin API (it answered /readyz with "shutting down" while
// the server drained), ends the control loop, which writes the state file one
// last time, waits for every goroutine, and releases the sampler, the
// upstream connections and the Redis store (its heartbeat leaves the node
// count at once). It returns the last state save's error. Call it after the
// server has shut down.
func (d *daemon) stop() error {
	if d.admin != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if err := d.admin.Shutdown(ctx); err != nil {
			d.log.Named("admin").Warn("admin API not shut down cleanly", "error", err)
		}
		cancel()
	}
	d.stopCtl()
	d.wg.Wait()
	if n := d.stopFronts(); n > 0 {
		d.log.Named("permit").Info("permits still held at exit ended", "permits", n)
	}
	d.sampler.Close()
	d.proxy.Close()
	if d.store != nil {
		if err := d.store.Close(); err != nil {
			d.log.Named("redis").Warn("redis connections not closed cleanly", "error", err)
		}
	}
	return d.ctlErr
}

// pending counts the requests the gate holds: in flight upstream or queued.
func (d *daemon) pending() int {
	n := 0
	for _, g := range d.gate.Groups() {
		n += g.InFlight + g.Queued
	}
	return n
}

// ready reports whether the daemon should get traffic: nil once the upstream
// has accepted a connection or answered a request, until shutdown begins.
// The running config is always valid (a bad reload is refused whole).
func (d *daemon) ready() error {
	if d.draining.Load() {
		return errors.New("sluice: shutting down")
	}
	if d.answered.Load() {
		return nil
	}
	for _, g := range d.gate.Groups() {
		if g.Completed[gate.Success]+g.Completed[gate.Ignored] > 0 {
			d.answered.Store(true)
			return nil
		}
	}
	return errors.New("sluice: the upstream has not answered yet")
}

// awaitUpstream probes the upstream until the daemon is ready: a connection
// to it, retried with a growing pause (up to 5 s), or an answer to a proxied
// request, whichever comes first. The first failure and the success are
// logged.
func (d *daemon) awaitUpstream(ctx context.Context) {
	log := d.log.Named("upstream")
	network, addr, err := splitAddress(d.started.Upstream.URL)
	if err != nil {
		log.Error("cannot probe the upstream", "url", d.started.Upstream.URL, "error", err)
		return
	}
	dialer := net.Dialer{Timeout: time.Duration(d.started.Upstream.DialTimeout)}
	pause := 250 * time.Millisecond
	timer := time.NewTimer(0)
	defer timer.Stop()
	for failures := 0; d.ready() != nil; failures++ {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		c, err := dialer.DialContext(ctx, network, addr)
		if err == nil {
			c.Close()
			d.answered.Store(true)
			break
		}
		if ctx.Err() != nil {
			return
		}
		if failures == 0 {
			log.Warn("upstream not reachable yet; requests get 502 until it is", "address", addr, "error", err)
		}
		timer.Reset(pause)
		pause = min(2*pause, 5*time.Second)
	}
	log.Info("upstream reachable", "address", addr)
}

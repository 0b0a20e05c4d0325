package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"

	"github.com/sluicehq/sluice/admin"
	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/permit"
	"github.com/sluicehq/sluice/rls"
)

// fronts are the daemon's front-ends beside the proxy, on the same gate:
// the permit service ([permit]) and Envoy's rate limit service ([rls]).
// Each part is nil when its section is absent. They are built with the
// daemon, started and stopped with it; a reload changes their leases,
// mapping and tokens (see apply), a restart the rest.
type fronts struct {
	permit    *permit.Service
	permitSrv *permit.Server
	permitLn  net.Listener

	rls    *rls.Service
	rlsSrv *rls.Server
	rlsLn  net.Listener
}

// buildFronts makes the front-ends of d.started and opens their listeners.
func (d *daemon) buildFronts() error {
	cfg, log := d.started, d.log
	if p := cfg.Permit; p != nil {
		tok, err := frontToken("permit", p.TokenFile)
		if err != nil {
			return err
		}
		if d.permit, err = permit.New(permit.Params{Gate: d.gate, Leases: permit.LeasesOf(p), MaxLeases: p.MaxLeases}); err != nil {
			return err
		}
		d.permitSrv, err = permit.NewServer(permit.ServerParams{
			Service:    d.permit,
			Listen:     p.Listen,
			SocketMode: fs.FileMode(p.SocketMode),
			Token:      tok,
			ErrorLog:   log.Named("permit").StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Warn}),
		})
		if err != nil {
			return err
		}
		if d.permitLn, err = d.permitSrv.Listen(); err != nil {
			return fmt.Errorf("permit.listen %s: %w", p.Listen, err)
		}
	}
	if r := cfg.RLS; r != nil {
		tok, err := frontToken("rls", r.TokenFile)
		if err != nil {
			return err
		}
		if d.rls, err = rls.New(rls.Params{Gate: d.gate, Mapping: rls.MappingOf(r)}); err != nil {
			return err
		}
		d.rlsSrv, err = rls.NewServer(rls.ServerParams{Service: d.rls, Listen: r.Listen, SocketMode: fs.FileMode(r.SocketMode), Token: tok})
		if err != nil {
			return err
		}
		if d.rlsLn, err = d.rlsSrv.Listen(); err != nil {
			return fmt.Errorf("rls.listen %s: %w", r.Listen, err)
		}
	}
	return nil
}

// frontToken reads a front-end's token file; "" gives no token.
func frontToken(section, path string) (string, error) {
	if path == "" {
		return "", nil
	}
	tok, err := admin.ReadTokenFile(path)
	if err != nil {
		return "", fmt.Errorf("%s.token_file: %w", section, err)
	}
	return tok, nil
}

// checkFronts reports the problems of cfg's front-ends that configs does
// not check (the shape of the rls mapping: bounds, repeated descriptors):
// a config with one does not start and is not reloaded.
func checkFronts(cfg *configs.Config) error {
	if cfg.RLS == nil {
		return nil
	}
	return rls.MappingOf(cfg.RLS).Validate()
}

// closeFronts releases the listeners of front-ends that never started.
func (f *fronts) closeFronts() {
	for _, ln := range []net.Listener{f.permitLn, f.rlsLn} {
		if ln != nil {
			ln.Close()
		}
	}
}

// startFronts runs the front-ends' servers and the permit leases' sweeper
// until ctx ends (the sweeper) or shutdown (the servers).
func (d *daemon) startFronts(ctx context.Context) {
	if d.permitSrv != nil {
		d.serve("permit", func() error { return d.permitSrv.Serve(d.permitLn) }, http.ErrServerClosed)
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			_ = d.permit.Run(ctx)
		}()
	}
	if d.rlsSrv != nil {
		d.serve("rls", func() error { return d.rlsSrv.Serve(d.rlsLn) }, grpc.ErrServerStopped)
	}
}

// shutdownFronts stops the front-ends' servers, letting the calls in
// progress finish until ctx ends (a permit caller waiting in a queue
// included), then cutting the rest. The permits granted keep their slots
// until released or expired; stopFronts ends them.
func (f *fronts) shutdownFronts(ctx context.Context) error {
	var errs []error
	if f.permitSrv != nil {
		errs = append(errs, f.permitSrv.Shutdown(ctx))
	}
	if f.rlsSrv != nil {
		errs = append(errs, f.rlsSrv.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// closeFrontServers cuts every front-end connection at once.
func (f *fronts) closeFrontServers() {
	if f.permitSrv != nil {
		f.permitSrv.Close()
	}
	if f.rlsSrv != nil {
		f.rlsSrv.Close()
	}
}

// stopFronts ends the permits still held (as ignored: the daemon, not
// their holders, ended them) and returns how many.
func (f *fronts) stopFronts() int {
	if f.permit == nil {
		return 0
	}
	return f.permit.Stop()
}

// applyFronts applies what a reload may change of the front-ends: the
// permit leases, the rls mapping and headers, and both token files (read
// again). The rest of [permit] and [rls] needs a restart (restartOnly).
func (d *daemon) applyFronts(cfg *configs.Config) error {
	var errs []error
	if d.permit != nil && cfg.Permit != nil {
		errs = append(errs, d.permit.SetLeases(permit.LeasesOf(cfg.Permit)))
		if tok, err := frontToken("permit", cfg.Permit.TokenFile); err != nil {
			errs = append(errs, err)
		} else {
			errs = append(errs, d.permitSrv.SetToken(tok))
		}
	}
	if d.rls != nil && cfg.RLS != nil {
		errs = append(errs, d.rls.SetMapping(rls.MappingOf(cfg.RLS)))
		if tok, err := frontToken("rls", cfg.RLS.TokenFile); err != nil {
			errs = append(errs, err)
		} else {
			errs = append(errs, d.rlsSrv.SetToken(tok))
		}
	}
	return errors.Join(errs...)
}

// frontsRestartOnly lists the front-end settings that differ between the
// running config and next and that only a restart applies.
func frontsRestartOnly(out []string, running, next *configs.Config) []string {
	type fixed struct {
		present    bool
		listen     string
		socketMode int
		maxLeases  int
	}
	permitOf := func(p *configs.Permit) fixed {
		if p == nil {
			return fixed{}
		}
		return fixed{true, p.Listen, p.SocketMode, p.MaxLeases}
	}
	rlsOf := func(r *configs.RLS) fixed {
		if r == nil {
			return fixed{}
		}
		return fixed{present: true, listen: r.Listen, socketMode: r.SocketMode}
	}
	for _, s := range []struct {
		name      string
		run, next fixed
	}{
		{"permit", permitOf(running.Permit), permitOf(next.Permit)},
		{"rls", rlsOf(running.RLS), rlsOf(next.RLS)},
	} {
		switch a, b := s.run, s.next; {
		case a.present != b.present:
			out = append(out, s.name)
		case a.present:
			if a.listen != b.listen {
				out = append(out, s.name+".listen")
			}
			if a.socketMode != b.socketMode {
				out = append(out, s.name+".socket_mode")
			}
			if a.maxLeases != b.maxLeases {
				out = append(out, s.name+".max_leases")
			}
		}
	}
	return out
}

// keepFrontsRestartOnly sets next's restart-only front-end settings to
// running's: a section the running daemon lacks stays off, one it has
// stays on (with the reloadable settings of next, or its own when next
// drops the section).
func keepFrontsRestartOnly(next, running *configs.Config) {
	switch {
	case running.Permit == nil:
		next.Permit = nil
	case next.Permit == nil:
		next.Permit = running.Permit
	default:
		next.Permit.Listen, next.Permit.SocketMode, next.Permit.MaxLeases = running.Permit.Listen, running.Permit.SocketMode, running.Permit.MaxLeases
	}
	switch {
	case running.RLS == nil:
		next.RLS = nil
	case next.RLS == nil:
		next.RLS = running.RLS
	default:
		next.RLS.Listen, next.RLS.SocketMode = running.RLS.Listen, running.RLS.SocketMode
	}
}

// frontStatuses are the front-ends as /v1/status shows them.
func (d *daemon) frontStatuses() []admin.FrontStatus {
	var out []admin.FrontStatus
	if d.permit != nil {
		st := d.permit.Stats()
		c := map[string]uint64{"held": uint64(st.Live), "capacity": uint64(st.Capacity), "full": st.Full}
		for _, g := range st.Groups {
			c["granted"] += g.Granted
			c["canceled"] += g.Canceled
			c["expired"] += g.Expired
			c["late"] += g.Late
			for _, n := range g.Refused {
				c["refused"] += n
			}
			for _, n := range g.Released {
				c["released"] += n
			}
		}
		out = append(out, admin.FrontStatus{Name: "permit", Listen: addrText(d.permitLn.Addr()), Token: d.started.Permit.TokenFile != "", Counts: c})
	}
	if d.rls != nil {
		st := d.rls.Stats()
		out = append(out, admin.FrontStatus{Name: "rls", Listen: addrText(d.rlsLn.Addr()), Token: d.started.RLS.TokenFile != "",
			Counts: map[string]uint64{"calls": st.Calls, "invalid": st.Invalid, "ok": st.OK, "over_limit": st.OverLimit,
				"shadowed": st.Shadowed, "unknown_domain": st.UnknownDomain, "unmatched": st.Unmatched, "refunds": st.Refunds}})
	}
	return out
}

// addrText is a listener's address as the config spells it: "host:port",
// or "unix:///path" for a unix socket.
func addrText(a net.Addr) string {
	if a.Network() == "unix" {
		return "unix://" + a.String()
	}
	return a.String()
}

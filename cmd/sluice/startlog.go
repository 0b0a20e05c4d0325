package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate/spec"
	"github.com/sluicehq/sluice/limits"
	"github.com/sluicehq/sluice/probe"
)

// logStart logs what the daemon is about to run: the real listening address,
// the upstream and its circuit breaker, every group with its law and limits,
// and what the state file restored.
func logStart(d *daemon) {
	log, cfg := d.log, d.started
	source := d.path
	if source == "" {
		source = "embedded default"
	}
	log.Info("starting", "version", version, "config", source, "pid", os.Getpid())
	log.Info("listening", "addr", d.ln.Addr().String(), "network", d.ln.Addr().Network(),
		"tls", cfg.Server.TLSCert != "", "h2c", cfg.Server.H2C && cfg.Server.TLSCert == "")
	circuit := "off"
	if c := &cfg.Upstream.Circuit; !c.Off() {
		circuit = fmt.Sprintf("failure_ratio=%g over %s (min %d), consecutive_failures=%d, open %s, %d probes",
			c.FailureRatio, c.Window, c.MinRequests, c.ConsecutiveFailures, c.OpenDuration, c.HalfOpenProbes)
	}
	log.Info("upstream", "url", cfg.Upstream.URL, "protocol", cfg.Upstream.Protocol, "circuit", circuit)
	if r := cfg.Redis; r != nil {
		where := r.Address
		if where == "" {
			where = "cluster " + strings.Join(r.ClusterAddresses, ",")
		}
		log.Named("redis").Info("global quotas in redis", "address", where, "tls", r.TLS, "db", r.DB,
			"timeout", r.Timeout, "fallback", r.Fallback, "nodes", r.Nodes, "key_prefix", r.KeyPrefix)
	}
	if d.admin != nil {
		a := d.adminLn.Addr()
		log.Named("admin").Info("admin API, metrics and dashboard", "addr", a.String(), "network", a.Network(),
			"url", "http://"+a.String()+"/", "mutations", cfg.Admin.TokenFile != "")
	} else {
		log.Named("admin").Info("admin API off (admin.listen is empty)")
	}

	if p := cfg.Permit; p != nil {
		a := d.permitLn.Addr()
		log.Named("permit").Info("permit service (HTTP/JSON and gRPC)", "addr", a.String(), "network", a.Network(),
			"token", p.TokenFile != "", "lease", p.Lease, "group_leases", len(p.Groups), "max_leases", p.MaxLeases)
	}
	if r := cfg.RLS; r != nil {
		a := d.rlsLn.Addr()
		log.Named("rls").Info("Envoy rate limit service (rate quotas only)", "addr", a.String(), "network", a.Network(),
			"token", r.TokenFile != "", "domains", len(r.Domains), "headers", r.Headers)
	}

	logSources(log.Named("probe"), cfg, d.sampler.Sources())

	glog := log.Named("gate")
	for _, st := range d.gate.Groups() {
		g := cfg.Group(st.Name)
		args := []any{"name", st.Name, "match", describeMatch(&g.Match), "law", st.Law,
			"limit", st.Limit, "min", st.Min, "max", st.Max, "key", g.Key, "priority", g.Priority}
		if r := g.Rate; r != nil {
			args = append(args, "rate", fmt.Sprintf("%s %s %g/s per %s key", r.Scope, r.Algorithm, r.PerSecond(), g.Key))
			if r.Scope == spec.ScopeGlobal {
				args = append(args, "sync", describeSync(r))
			}
			if r.Mode == spec.ModeShadow {
				args = append(args, "rate_mode", r.Mode)
			}
		}
		if g.Mode == spec.ModeShadow {
			args = append(args, "mode", "shadow: admits every request, counts what it would refuse")
		}
		if g.Queue.Max > 0 {
			args = append(args, "queue", fmt.Sprintf("%s, %d, max_wait %s", g.Queue.Order, g.Queue.Max, configs.Duration(g.Queue.MaxWait)))
		} else {
			args = append(args, "queue", "none")
		}
		glog.Info("group", args...)
	}

	ri := d.gate.RestoreInfo()
	clog := log.Named("control")
	switch {
	case ri.Path == "":
		clog.Info("no state file (control.state_file): limits start from their configured values")
	case ri.Err != nil:
		clog.Warn("state file not used: limits start from their configured values", "path", ri.Path, "error", ri.Err)
	case ri.SavedAt.IsZero():
		clog.Info("state file not written yet: limits start from their configured values", "path", ri.Path)
	default:
		clog.Info("limits restored from the state file", "path", ri.Path, "saved_at", ri.SavedAt.Format("2006-01-02T15:04:05Z07:00"), "groups", ri.Groups)
	}
}

// guardedTargets are the targets that steer on a guarded signal of the
// probe: the name of each, and whether a group sets it.
var guardedTargets = []struct {
	name   string
	signal func(probe.Sources) probe.Source
	set    func(*spec.Targets) bool
}{
	{"cpu", func(s probe.Sources) probe.Source { return s.CPU }, func(t *spec.Targets) bool { return t.CPU > 0 }},
	{"memory", func(s probe.Sources) probe.Source { return s.Memory }, func(t *spec.Targets) bool { return t.Memory > 0 }},
	{"cpu_pressure", func(s probe.Sources) probe.Source { return s.CPUPressure }, func(t *spec.Targets) bool { return t.CPUPressure > 0 }},
}

// logSources logs where each guarded signal comes from, and, once for each
// target set by some group whose signal has no source, that the target is
// off and why.
func logSources(log hclog.Logger, cfg *configs.Config, src probe.Sources) {
	log.Info("cpu", "source", src.CPU.Text)
	log.Info("memory", "source", src.Memory.Text)
	log.Info("cpu pressure", "source", src.CPUPressure.Text)
	for _, t := range guardedTargets {
		sig := t.signal(src)
		if sig.Usable() {
			continue
		}
		var groups []string
		for i := range cfg.Groups {
			if t.set(&cfg.Groups[i].Targets) {
				groups = append(groups, cfg.Groups[i].Name)
			}
		}
		if len(groups) > 0 {
			log.Warn("target "+t.name+" switched off: its signal has no source", "groups", strings.Join(groups, ","), "why", strings.TrimPrefix(sig.Text, "none: "))
		}
	}
}

// describeSync tells how the nodes share a global quota: exact, or leased
// with the lease's period, expiry and over-admission bound, which the
// operator otherwise finds only in /v1/status.
func describeSync(r *spec.Rate) string {
	if r.Sync != limits.SyncLeased {
		return "exact: every decision in redis"
	}
	return fmt.Sprintf("leased: lease_period %s, lease_expiry %s, over-admission bound %d units (1.5 × rate × lease_period)",
		configs.Duration(r.LeasePeriod), configs.Duration(r.LeaseExpiry), r.LeaseBound())
}

// describeMatch renders a group's match for the log: "*" for every request.
func describeMatch(m *spec.Match) string {
	var parts []string
	if len(m.Methods) > 0 {
		parts = append(parts, strings.Join(m.Methods, "|"))
	}
	if m.Host != "" {
		parts = append(parts, "host "+m.Host)
	}
	switch {
	case m.Path != "":
		parts = append(parts, "path "+m.Path)
	case m.PathPrefix != "" && m.PathPrefix != "/":
		parts = append(parts, "prefix "+m.PathPrefix)
	}
	for _, k := range slices.Sorted(maps.Keys(m.Headers)) {
		parts = append(parts, k+"="+m.Headers[k])
	}
	if len(parts) == 0 {
		return "*"
	}
	return strings.Join(parts, " ")
}

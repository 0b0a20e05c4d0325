package main

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/sluicehq/sluice/admin"
	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
)

// reload reads the config file again and swaps it in whole (SIGHUP runs it;
// the admin API's POST /v1/reload runs the same steps). A file that does not
// load is refused, every problem logged, and the running config keeps
// serving. Groups whose settings did not change keep their learned limits and
// state. With the admin API on, the reload goes through it, so that runtime
// overrides are kept or cleared as their PATCH asked and the reload is
// counted in its metrics.
// by says who asked ("SIGHUP"), for the log.
func (d *daemon) reload(ctx context.Context, by string) error {
	if d.admin != nil {
		_, err := d.admin.Reload(ctx, by) // loadNext and logReload run inside
		return err
	}
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	cfg, err := d.loadNext(ctx)
	if err != nil {
		d.logReload(admin.ReloadReport{By: by}, err)
		return err
	}
	was := d.gate.Config()
	res, err := d.gate.Reload(cfg.Gate(), gate.ReloadOptions{Source: d.path, Hash: cfg.Hash()})
	rep := admin.ReloadReport{Source: d.path, ReloadResult: res, Config: cfg, By: by}
	if err == nil {
		rep.Fields = admin.ConfigChanges(was, d.gate.Config())
	}
	d.logReload(rep, err)
	return err
}

// loadNext reads the config file for a reload. Problems are logged one per
// line. The listener, the upstream, the probe, the admin API, Redis and the
// state file are set up once, at start: a file that changes them is logged
// as needing a restart, and the returned config keeps their running values
// (the gate then reports the settings in force, not the file's).
func (d *daemon) loadNext(ctx context.Context) (*configs.Config, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	log := d.log.Named("config")
	if d.path == "" {
		return nil, errors.New("sluice: reload: started without -config, so there is no file to read again")
	}
	cfg, err := configs.Load(d.path)
	if err != nil {
		logConfigProblems(log, err)
		return nil, fmt.Errorf("sluice: reload %s: %w", d.path, err)
	}
	if err := checkFronts(cfg); err != nil {
		log.Error("config problem", "file", d.path, "problem", err)
		return nil, fmt.Errorf("sluice: reload %s: %w", d.path, err)
	}
	if changed := restartOnly(d.started, cfg); len(changed) > 0 {
		log.Warn("settings that only a restart applies changed; they keep their running values", "settings", strings.Join(changed, ", "))
	}
	keepRestartOnly(cfg, d.started)
	return cfg, nil
}

// logReload logs how a reload ended, who asked and what it changed, in one
// line, and, when the gate took the new config (rep.Config), applies it to
// the front-ends (applyFronts).
func (d *daemon) logReload(rep admin.ReloadReport, err error) {
	log := d.log.Named("config")
	if err != nil {
		log.Error("reload refused: the running config keeps serving", "file", d.path, "by", rep.By, "error", err)
		return
	}
	if err := d.applyFronts(rep.Config); err != nil {
		log.Error("reload: the front-ends keep their running settings where they refused the new ones", "error", err)
	}
	res := rep.ReloadResult
	changes := make([]string, len(rep.Fields))
	for i, g := range rep.Fields {
		changes[i] = g.Group + ": " + admin.FormatChanges(g.Fields)
	}
	log.Info("config reloaded", "file", d.path, "by", rep.By,
		"unchanged", strings.Join(res.Unchanged, ","), "changed", strings.Join(res.Changed, ","),
		"added", strings.Join(res.Added, ","), "removed", strings.Join(res.Removed, ","),
		"overrides_cleared", strings.Join(rep.Cleared, ","), "settings", strings.Join(changes, "; "))
}

// logChange logs a runtime change made through the admin API in one line:
// who asked, the group and each field changed, from and to. A switch of
// the group's mode is said in the message, as the change operators look
// for first.
func (d *daemon) logChange(c admin.Change) {
	msg := "group changed at runtime"
	for _, f := range c.Fields {
		if f.Path == "mode" {
			msg = "group mode switched at runtime: " + f.From + " → " + f.To
		}
	}
	args := []any{"group", c.Group, "by", c.By, "request", c.Request, "changed", admin.FormatChanges(c.Fields)}
	if len(c.Notes) > 0 {
		args = append(args, "notes", strings.Join(c.Notes, "; "))
	}
	d.log.Named("admin").Info(msg, args...)
}

// logConfigProblems logs each problem of a config that does not load, one
// line each.
func logConfigProblems(log hclog.Logger, err error) {
	var problems configs.Errors
	if !errors.As(err, &problems) {
		log.Error("cannot read the config", "error", err)
		return
	}
	for _, p := range problems {
		args := []any{"problem", p.Msg}
		if p.Path != "" {
			args = append([]any{"key", p.Path}, args...)
		}
		if p.Line > 0 {
			args = append([]any{"line", p.Line}, args...)
		}
		log.Error("config problem", append([]any{"file", p.File}, args...)...)
	}
}

// restartOnly lists the settings that differ between the running config and
// next and that only a restart applies, by key path ("server.listen").
func restartOnly(running, next *configs.Config) []string {
	var out []string
	out = diffFields(out, "server", running.Server, next.Server)
	out = diffFields(out, "upstream", running.Upstream, next.Upstream)
	out = diffFields(out, "probe", running.Probe, next.Probe)
	out = diffFields(out, "admin", running.Admin, next.Admin)
	if running.Control.StateFile != next.Control.StateFile {
		out = append(out, "control.state_file")
	}
	if !reflect.DeepEqual(running.Redis, next.Redis) {
		out = append(out, "redis")
	}
	return frontsRestartOnly(out, running, next)
}

// diffFields appends the TOML key of every field of the structs a and b
// that differs, under prefix.
func diffFields(out []string, prefix string, a, b any) []string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	t := va.Type()
	for i := range t.NumField() {
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ",")
			out = append(out, prefix+"."+name)
		}
	}
	return out
}

// keepRestartOnly sets next's restart-only settings to running's.
func keepRestartOnly(next, running *configs.Config) {
	next.Server, next.Upstream, next.Probe, next.Admin = running.Server, running.Upstream, running.Probe, running.Admin
	next.Control.StateFile = running.Control.StateFile
	next.Redis = running.Redis
	keepFrontsRestartOnly(next, running)
}

package admin

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/sluicehq/sluice/admin/api"
	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
)

// ErrNoLoad is returned by Reload when Params.Load is nil.
var ErrNoLoad = errors.New("admin: reload is not available: no config loader (Params.Load)")

// ReloadReport says what a reload through the Server did.
type ReloadReport struct {
	// Source and Hash identify the config now running, and Config is it as
	// loaded (overrides aside); nil when the reload failed.
	Source, Hash string
	Config       *configs.Config
	// ReloadResult is the gate's account, by group name. Its KeptOverrides
	// are the overrides that survived: those whose PATCH asked
	// keep_on_reload (or all of them, for a reload that asked to keep them)
	// and that the new config accepts.
	gate.ReloadResult
	// Cleared names the groups whose override the reload cleared, as asked
	// or because the new config refuses it (then DroppedOverrides says why).
	Cleared []string
	// By says who asked for the reload: the admin API's Caller, or the
	// caller of Reload ("SIGHUP").
	By string
	// Fields are, for each group that the old and the new config both have
	// and whose settings differ, what changed (a mode switch included), in
	// the new config's order.
	Fields []GroupFields
}

// GroupFields are the settings of one group that a change made differ.
type GroupFields struct {
	Group  string
	Fields []gate.FieldChange
}

// ConfigChanges lists, for each group of after that before has too, the
// settings that differ (FieldChanges), in after's order; groups alike are
// left out.
func ConfigChanges(before, after gate.Config) []GroupFields {
	var out []GroupFields
	for _, ag := range after.Groups {
		bg := before.Group(ag.Name)
		if bg == nil {
			continue
		}
		if f := FieldChanges(bg, &ag); len(f) > 0 {
			out = append(out, GroupFields{Group: ag.Name, Fields: f})
		}
	}
	return out
}

// Reload re-reads the configuration (Params.Load) and applies it: the
// daemon's reload, whether asked by POST /v1/reload or by SIGHUP, so that
// both keep the overrides whose PATCH asked keep_on_reload, clear the others,
// and are counted in sluice_config_reloads_total. A bad config is refused
// whole and the running one stays; the error is Load's, or the gate's
// wrapping a configs.Errors, and /v1/status shows it until the next refusal.
// by says who asked, for the report ("SIGHUP").
func (s *Server) Reload(ctx context.Context, by string) (ReloadReport, error) {
	return s.reload(ctx, false, by)
}

// reload is Reload; keepAll keeps every override in force.
func (s *Server) reload(ctx context.Context, keepAll bool, by string) (rep ReloadReport, err error) {
	rep.By = by
	defer func() {
		result := "success"
		if err != nil {
			result = "failure"
			s.refused.Store(&api.RefusedReload{At: s.p.Now(), By: by, Error: err.Error()})
		}
		s.reloads.WithLabelValues(result).Inc()
		if s.p.OnReload != nil {
			s.p.OnReload(rep, err)
		}
	}()
	if s.p.Load == nil {
		return rep, ErrNoLoad
	}
	cfg, err := s.p.Load(ctx)
	if err != nil {
		return rep, err
	}
	if cfg == nil {
		return rep, errors.New("admin: reload: the loader returned no config")
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneKeep()
	was := s.gate.Config()
	var before []string
	for _, g := range s.gate.Groups() {
		if g.Override != nil {
			before = append(before, g.Name)
		}
	}
	// One swap: the overrides whose PATCH asked keep_on_reload (or all, for
	// keepAll) are re-applied onto the file, the others cleared.
	res, err := s.gate.Reload(cfg.Gate(), gate.ReloadOptions{
		Source: s.gate.Status().ConfigSource,
		Hash:   cfg.Hash(),
		KeepOverride: func(name string) bool {
			return keepAll || s.keep[name]
		},
	})
	if err != nil {
		return rep, err
	}
	s.file.Store(cfg)
	rep.ReloadResult = res
	rep.Config = cfg
	rep.Fields = ConfigChanges(was, s.gate.Config())
	for _, name := range before {
		if !slices.Contains(rep.KeptOverrides, name) {
			rep.Cleared = append(rep.Cleared, name)
		}
	}
	s.pruneKeep()
	if s.p.Metrics != nil {
		names := make([]string, 0, len(cfg.Groups))
		for _, g := range s.gate.Groups() {
			names = append(names, g.Name)
		}
		s.p.Metrics.retain(names)
	}
	st := s.gate.Status()
	rep.Source, rep.Hash = st.ConfigSource, st.ConfigHash
	return rep, nil
}

// pruneKeep forgets the keep flag of groups that have no override any more
// (cleared by a reload made around the Server, or removed). s.mu is held.
func (s *Server) pruneKeep() {
	for name := range s.keep {
		if st, ok := s.gate.Group(name); !ok || st.Override == nil {
			delete(s.keep, name)
		}
	}
}

// reloadBody is POST /v1/reload's optional body.
type reloadBody struct {
	// KeepOverrides keeps every override in force, whatever its PATCH asked.
	KeepOverrides bool `json:"keep_overrides"`
}

func (s *Server) postReload(w http.ResponseWriter, r *http.Request) {
	body, aerr := readBody(r, s.p.MaxBodyBytes)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	var rb reloadBody
	if len(body) > 0 {
		if err := decodeOne(body, &rb); err != nil {
			writeError(w, errorf(http.StatusBadRequest,
				`admin: the body must be empty or {"keep_overrides": true}: `+err.Error()))
			return
		}
	}
	rep, err := s.reload(r.Context(), rb.KeepOverrides, Caller(r))
	if err != nil {
		writeError(w, reloadError(err))
		return
	}
	v := api.Reload{
		Source:           rep.Source,
		Hash:             rep.Hash,
		Unchanged:        nonNil(rep.Unchanged),
		Changed:          nonNil(rep.Changed),
		Added:            nonNil(rep.Added),
		Removed:          nonNil(rep.Removed),
		KeptOverrides:    nonNil(rep.KeptOverrides),
		ClearedOverrides: nonNil(rep.Cleared),
		DroppedOverrides: []string{},
	}
	for _, e := range rep.DroppedOverrides {
		v.DroppedOverrides = append(v.DroppedOverrides, e.Error())
	}
	writeJSON(w, http.StatusOK, v)
}

// reloadError turns a failed reload into an answer: the config's problems
// one by one (with file and line) as 422, no loader as 501, anything else
// (an unreadable file) as 500.
func reloadError(err error) *apiError {
	var ce configs.Errors
	switch {
	case errors.Is(err, ErrNoLoad):
		return errorf(http.StatusNotImplemented, err.Error())
	case errors.As(err, &ce):
		ps := make([]problem, len(ce))
		for i, e := range ce {
			ps[i] = problem{Field: e.Path, Error: e.Error()}
		}
		e := problems(http.StatusUnprocessableEntity, ps)
		e.Message = "admin: the config was refused, the running one stays: " + ce.Error()
		return e
	}
	return errorf(http.StatusInternalServerError, "admin: reload failed, the running config stays: "+err.Error())
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

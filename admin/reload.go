package admin

import (
	"context"
	"errors"
	"fmt"
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
	// Source and Hash identify the config now running.
	Source, Hash string
	// ReloadResult is the gate's account, by group name. Its KeptOverrides
	// are the overrides that survived: those whose PATCH asked
	// keep_on_reload (or all of them, for a reload that asked to keep them).
	gate.ReloadResult
	// Cleared names the groups whose override the reload cleared. An
	// override that could not be cleared stays in KeptOverrides, with why in
	// DroppedOverrides.
	Cleared []string
}

// Reload re-reads the configuration (Params.Load) and applies it: the
// daemon's reload, whether asked by POST /v1/reload or by SIGHUP, so that
// both keep the overrides whose PATCH asked keep_on_reload, clear the others,
// and are counted in sluice_config_reloads_total. A bad config is refused
// whole and the running one stays; the error is Load's, or the gate's
// wrapping a configs.Errors.
func (s *Server) Reload(ctx context.Context) (ReloadReport, error) {
	return s.reload(ctx, false)
}

// reload is Reload; keepAll keeps every override in force.
func (s *Server) reload(ctx context.Context, keepAll bool) (rep ReloadReport, err error) {
	defer func() {
		result := "success"
		if err != nil {
			result = "failure"
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
	var before []string
	for _, g := range s.gate.Groups() {
		if g.Override != nil {
			before = append(before, g.Name)
		}
	}
	res, err := s.gate.Reload(cfg, gate.ReloadOptions{
		Source:        s.gate.Status().ConfigSource,
		KeepOverrides: keepAll || len(s.keep) > 0,
	})
	if err != nil {
		return rep, err
	}
	rep.ReloadResult = res
	if !keepAll {
		// The gate kept every override; put the file's values back where the
		// PATCH did not ask to keep them.
		kept := res.KeptOverrides[:0:0]
		for _, name := range res.KeptOverrides {
			if s.keep[name] {
				kept = append(kept, name)
				continue
			}
			if err := s.gate.Override(cfg.Group(name).Clone()); err != nil {
				// Cannot happen for values the file itself holds; if it
				// does, the override stays and says so.
				rep.DroppedOverrides = append(rep.DroppedOverrides,
					fmt.Errorf("admin: the override of group %q could not be cleared and stays: %w", name, err))
				kept = append(kept, name)
			}
		}
		rep.KeptOverrides = kept
	}
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
	rep, err := s.reload(r.Context(), rb.KeepOverrides)
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

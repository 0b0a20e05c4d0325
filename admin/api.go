package admin

import (
	"net/http"
	"runtime"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/admin/api"
	"github.com/sluicehq/sluice/internal/listen"
)

func (s *Server) getStatus(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.statusView())
}

// statusView is the answer of GET /v1/status.
func (s *Server) statusView() api.Status {
	st := s.gate.Status()
	cfg := s.gate.Config()
	now := s.p.Now()
	v := api.Status{
		Version:       s.p.Version,
		GoVersion:     runtime.Version(),
		Started:       s.started,
		UptimeSeconds: now.Sub(s.started).Seconds(),
		Ready:         true,
		Config: api.ConfigInfo{
			Source:    st.ConfigSource,
			Hash:      st.ConfigHash,
			Loaded:    when(st.ConfigLoaded),
			Groups:    make([]string, 0, len(cfg.Groups)),
			Overrides: []string{},
		},
		Control: api.Control{Interval: cfg.Interval.Seconds(), Ticks: st.Ticks, LastTick: when(st.LastTick)},
		State: api.State{File: st.StateFile, LastSave: when(st.LastSave),
			Restore: api.Restore{SavedAt: when(st.Restore.SavedAt), Groups: st.Restore.Groups}},
		Resources: newResourcesView(st.Resources),
		Admin:     api.Admin{Listen: s.p.Listen, Writable: s.token.set, ReadsNeedToken: s.reach == listen.Open},
	}
	v.Config.RefusedReload = s.refused.Load()
	if a := s.Addr(); a != nil {
		v.Admin.Listen = a.String()
		if a.Network() == "unix" {
			v.Admin.Listen = "unix://" + a.String()
		}
	}
	if v.Version == "" {
		v.Version = "unknown"
	}
	if err := s.ready(); err != nil {
		v.Ready, v.NotReady = false, err.Error()
	}
	if st.SaveErr != nil {
		v.State.SaveError = st.SaveErr.Error()
	}
	if st.Restore.Err != nil {
		v.State.Restore.Error = st.Restore.Err.Error()
	}
	groups := s.gate.Groups()
	for _, g := range groups {
		v.Config.Groups = append(v.Config.Groups, g.Name)
		if g.Override != nil {
			v.Config.Overrides = append(v.Config.Overrides, g.Name)
		}
	}
	v.Redis = newRedisView(groups, s.file.Load())
	if s.p.Circuit != nil {
		if c, ok := s.p.Circuit(); ok {
			v.Circuit = &api.Circuit{State: c.State, Since: c.Since, Reason: c.Reason}
		}
	}
	v.Fronts = []api.Front{}
	if s.p.Fronts != nil {
		for _, f := range s.p.Fronts() {
			v.Fronts = append(v.Fronts, api.Front(f))
		}
	}
	return v
}

// FrontStatus is a front-end beside the proxy, on the same gate, as
// /v1/status shows it (Params.Fronts): its name ("permit", "rls"), the
// address it serves ("unix:///path" for a unix socket), whether its calls
// need a token, and its counts by name: since start, but for those the
// front-end documents as levels (the permits held now).
type FrontStatus struct {
	Name   string
	Listen string
	Token  bool
	Counts map[string]uint64
}

// CircuitStatus is the upstream's circuit breaker as /v1/status shows it
// (Params.Circuit): its state ("closed", "open" or "half_open"), since when,
// and why it came to be in it ("" while it never changed).
type CircuitStatus struct {
	State  string
	Since  time.Time
	Reason string
}

func (s *Server) getGroups(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.groupsView())
}

// groupsView is the answer of GET /v1/groups.
func (s *Server) groupsView() api.Groups {
	sts := s.gate.Groups()
	off := switchedOffIn(s.gate.Status())
	v := api.Groups{Groups: make([]api.Group, len(sts))}
	s.mu.Lock()
	for i, st := range sts {
		v.Groups[i] = newGroupView(st, s.groupConfig(st.Name), s.keep[st.Name], off)
	}
	s.mu.Unlock()
	return v
}

func (s *Server) getGroup(w http.ResponseWriter, r *http.Request) {
	v, err := s.groupView(r.PathValue("name"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// groupView renders the group called name, or a 404.
func (s *Server) groupView(name string) (api.Group, *apiError) {
	st, ok := s.gate.Group(name)
	if !ok {
		return api.Group{}, noGroup(name)
	}
	s.mu.Lock()
	keep := s.keep[name]
	s.mu.Unlock()
	return newGroupView(st, s.groupConfig(name), keep, switchedOffIn(s.gate.Status())), nil
}

func noGroup(name string) *apiError {
	return errorf(http.StatusNotFound, "admin: no group named "+quoteName(name)+" (GET /v1/groups lists them)")
}

// quoteName quotes a group name from a URL for a message, cut to the
// longest valid name.
func quoteName(name string) string {
	const maxName = 64
	if len(name) > maxName {
		name = name[:maxName] + "…"
	}
	return strconv.Quote(name)
}

func (s *Server) livez(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, api.Health{Status: "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	if err := s.ready(); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, api.Health{Status: "not ready", Error: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, api.Health{Status: "ready"})
}

// ready is Params.Ready. The gate itself only ever runs a valid config: it
// refuses an invalid one at New and Reload.
func (s *Server) ready() error {
	if s.p.Ready == nil {
		return nil
	}
	return s.p.Ready()
}

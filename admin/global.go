package admin

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/admin/api"
	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/limits"
)

// The read-outs of global quotas (rate scope "global", kept in Redis): each
// group's in its rate, the link to Redis in /v1/status and the metrics. They
// come from gate.GroupStatus.Global; the groups of one daemon share one
// Redis, so the link's state (mode, since, last error, nodes) is the same in
// every group, and the first group with a global quota tells it.

func newGlobalView(st gate.GroupStatus) *api.Global {
	g := st.Global
	if g == nil {
		return nil
	}
	v := &api.Global{Mode: g.Mode, Fallback: string(g.Fallback),
		Decisions: api.Decisions{Redis: g.StoreDecisions, Fallback: g.FallbackDecisions},
		Errors:    g.Errors, Timeouts: g.Timeouts,
		Sync: string(g.Sync), QuotaVersion: g.QuotaVersion, QuotaError: g.QuotaError}
	if g.Sync == limits.SyncLeased {
		v.Lease = &api.Lease{Bound: g.Bound, Outstanding: g.Outstanding, Held: g.Held, Keys: g.Leases,
			Admitted: g.LeasedUnits, Refused: g.RefusedUnits,
			Renewals: g.Renewals, RenewalErrors: g.RenewalErrors, LastRenewal: when(g.LastRenewal),
			FallbackShare: g.Share, Rejoins: g.Rejoins, Rejoining: g.Rejoining}
	}
	return v
}

// newRedisView sums up the global quotas of groups; nil when none has one.
func newRedisView(groups []gate.GroupStatus, cfg *configs.Config) *api.Redis {
	var v *api.Redis
	for _, st := range groups {
		g := st.Global
		if g == nil {
			continue
		}
		if v == nil {
			v = &api.Redis{Mode: g.Mode, Since: g.Since, NextProbe: when(g.NextProbe), LastError: g.LastError,
				LastErrorAt: when(g.LastErrorAt), Fallback: string(g.Fallback), Nodes: api.Nodes{Share: g.Nodes},
				Timeout: g.Timeout.Seconds()}
			if g.ObservedNodes > 0 {
				n := g.ObservedNodes
				v.Nodes.Observed = &n
			}
			if cfg.Redis != nil {
				v.Nodes.Configured = cfg.Redis.Nodes
			}
		}
		v.Groups = append(v.Groups, st.Name)
		v.Decisions.Redis += g.StoreDecisions
		v.Decisions.Fallback += g.FallbackDecisions
		v.Errors += g.Errors
		v.Timeouts += g.Timeouts
		late := api.Late{Group: st.Name, Admitted: g.LateAdmitted}
		if g.LateBound >= 0 {
			b := g.LateBound
			late.Bound = &b
		}
		v.Late = append(v.Late, late)
		if g.Sync == limits.SyncLeased {
			v.Leased = append(v.Leased, api.Leased{Group: st.Name, Bound: g.Bound, Outstanding: g.Outstanding})
		}
	}
	return v
}

var (
	descRedisUp = prometheus.NewDesc("sluice_redis_up",
		"1 while global quotas are decided by Redis, 0 while Redis is down and the fallback decides them; absent without a global quota.",
		nil, nil)
	descRedisDecisions = prometheus.NewDesc("sluice_redis_decisions_total",
		"Decisions of the group's global quota, by source: redis, or fallback (Redis down, failing or too slow).",
		[]string{"group", "source"}, nil)
	descRedisErrors = prometheus.NewDesc("sluice_redis_errors_total",
		"Calls to Redis for the group's global quota that failed, by kind: timeout (beyond redis.timeout) or error.",
		[]string{"group", "kind"}, nil)
	descRedisNodes = prometheus.NewDesc("sluice_redis_nodes",
		"The node count the local fallback shares each global quota by: the larger of redis.nodes and the nodes seen alive.",
		nil, nil)
	descRedisObserved = prometheus.NewDesc("sluice_redis_observed_nodes",
		"sluice nodes seen alive through their heartbeats in Redis; absent before the first heartbeat.", nil, nil)
	descRedisTimeout = prometheus.NewDesc("sluice_redis_timeout_seconds",
		"How long a decision waits for Redis now: redis.timeout, or more while Redis answers slower (twice its p99, up to 100ms).", nil, nil)
	descLateBound = prometheus.NewDesc("sluice_redis_late_bound_units_per_second",
		"What the decisions of a global quota that Redis did not answer in time may admit by the fallback, on all nodes together: 1 % of the quota; absent with fallback open (no bound).",
		[]string{"group"}, nil)
	descLateAdmitted = prometheus.NewDesc("sluice_redis_late_admitted_units_total",
		"Units this node admitted by the fallback for decisions Redis did not answer in time (within the late bound).",
		[]string{"group"}, nil)

	descLeaseBound = prometheus.NewDesc("sluice_redis_lease_bound_units",
		"Over-admission bound of a leased global quota, per key, in cost units: 1.5 × rate × lease_period of the quota in force; absent with sync exact.",
		[]string{"group"}, nil)
	descLeaseOutstanding = prometheus.NewDesc("sluice_redis_lease_outstanding_units",
		"Units of a leased global quota leased out to all nodes together, as Redis counted them at this node's last renewals (its keys summed): the over-admission now.",
		[]string{"group"}, nil)
	descLeaseHeld = prometheus.NewDesc("sluice_redis_lease_held_units",
		"Units of a leased global quota this node holds now, to decide on locally.",
		[]string{"group"}, nil)
	descLeaseUnits = prometheus.NewDesc("sluice_redis_lease_decided_units_total",
		"Units this node decided locally against its leases, by result: admitted or refused.",
		[]string{"group", "result"}, nil)
	descLeaseRenewals = prometheus.NewDesc("sluice_redis_lease_renewals_total",
		"Lease renewal calls of a leased global quota, by result: ok (Redis answered) or error.",
		[]string{"group", "result"}, nil)
	descLeaseShare = prometheus.NewDesc("sluice_redis_lease_fallback_share_units_per_second",
		"The rate this node decides a leased global quota by while Redis is away: its max-min fair part of the quota, the units it holds counting toward it.",
		[]string{"group"}, nil)
	descLeaseRejoins = prometheus.NewDesc("sluice_redis_lease_rejoins_total",
		"Redis restarts (an empty Redis, a new epoch of the lease hash) this node found for a leased global quota; it then took no more than its share until the other nodes were back.",
		[]string{"group"}, nil)
)

var globalDescs = []*prometheus.Desc{descRedisUp, descRedisDecisions, descRedisErrors, descRedisNodes, descRedisObserved,
	descRedisTimeout, descLateBound, descLateAdmitted,
	descLeaseBound, descLeaseOutstanding, descLeaseHeld, descLeaseUnits, descLeaseRenewals, descLeaseShare, descLeaseRejoins}

// collectGlobal exports the global quotas of groups.
func collectGlobal(ch chan<- prometheus.Metric, groups []gate.GroupStatus) {
	link := false
	for _, st := range groups {
		g := st.Global
		if g == nil {
			continue
		}
		if !link {
			link = true
			up := 0.0
			if g.Mode == "redis" {
				up = 1
			}
			ch <- prometheus.MustNewConstMetric(descRedisUp, prometheus.GaugeValue, up)
			ch <- prometheus.MustNewConstMetric(descRedisNodes, prometheus.GaugeValue, float64(g.Nodes))
			ch <- prometheus.MustNewConstMetric(descRedisTimeout, prometheus.GaugeValue, g.Timeout.Seconds())
			if g.ObservedNodes > 0 {
				ch <- prometheus.MustNewConstMetric(descRedisObserved, prometheus.GaugeValue, float64(g.ObservedNodes))
			}
		}
		counter := func(d *prometheus.Desc, v uint64, label string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), st.Name, label)
		}
		counter(descRedisDecisions, g.StoreDecisions, "redis")
		counter(descRedisDecisions, g.FallbackDecisions, "fallback")
		counter(descRedisErrors, g.Errors-min(g.Timeouts, g.Errors), "error") // read apart: a timeout may show first
		counter(descRedisErrors, g.Timeouts, "timeout")
		if g.LateBound >= 0 {
			ch <- prometheus.MustNewConstMetric(descLateBound, prometheus.GaugeValue, g.LateBound, st.Name)
		}
		ch <- prometheus.MustNewConstMetric(descLateAdmitted, prometheus.CounterValue, float64(g.LateAdmitted), st.Name)
		if g.Sync != limits.SyncLeased {
			continue
		}
		gauge := func(d *prometheus.Desc, v int64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), st.Name)
		}
		gauge(descLeaseBound, g.Bound)
		gauge(descLeaseOutstanding, g.Outstanding)
		gauge(descLeaseHeld, g.Held)
		counter(descLeaseUnits, g.LeasedUnits, "admitted")
		counter(descLeaseUnits, g.RefusedUnits, "refused")
		counter(descLeaseRenewals, g.Renewals, "ok")
		counter(descLeaseRenewals, g.RenewalErrors, "error")
		ch <- prometheus.MustNewConstMetric(descLeaseShare, prometheus.GaugeValue, g.Share, st.Name)
		ch <- prometheus.MustNewConstMetric(descLeaseRejoins, prometheus.CounterValue, float64(g.Rejoins), st.Name)
	}
}

// A global quota's definition in Redis (GET, PATCH, DELETE
// /v1/groups/{name}/global): see the package doc, "Global quotas".

// globalQuotas is the gate's access to its groups' global quotas
// (*gate.Gate has it); a Gate without it has none to change.
type globalQuotas interface {
	GlobalQuota(name string) (gate.GlobalQuota, bool)
}

func newQuotaView(name string, q gate.Quota) api.Quota {
	v := api.Quota{Group: name, Algorithm: q.Algorithm, Rate: q.Rate, Burst: q.Burst,
		Limit: q.Limit, Window: configs.Duration(q.Window), Version: q.Version, Source: "config"}
	if q.Version > 0 {
		v.Source = "redis"
	}
	return v
}

// globalTimeout bounds the Redis calls of one request of the global
// quota's endpoint.
const globalTimeout = 2 * time.Second

// globalQuota returns the global quota of the request's group, or the
// error to answer.
func (s *Server) globalQuota(r *http.Request) (string, gate.GlobalQuota, *apiError) {
	name := r.PathValue("name")
	if _, ok := s.gate.Group(name); !ok {
		return name, nil, noGroup(name)
	}
	gq, ok := s.gate.(globalQuotas)
	var q gate.GlobalQuota
	if ok {
		q, ok = gq.GlobalQuota(name)
	}
	if !ok {
		return name, nil, errorf(http.StatusConflict, "admin: group "+quoteName(name)+` has no global quota (rate scope "global" with [redis])`)
	}
	return name, q, nil
}

func (s *Server) getGlobal(w http.ResponseWriter, r *http.Request) {
	name, q, aerr := s.globalQuota(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, http.StatusOK, newQuotaView(name, q.Quota()))
}

// patchGlobal writes the quota's new amounts to Redis, merged onto those in
// force, for every node.
func (s *Server) patchGlobal(w http.ResponseWriter, r *http.Request) {
	body, aerr := readBody(r, s.p.MaxBodyBytes)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	name, q, aerr := s.globalQuota(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	next, aerr := decodeQuota(q.Quota(), body)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), globalTimeout)
	defer cancel()
	was := q.Quota()
	now, err := q.Define(ctx, next)
	if err != nil {
		writeError(w, redisError(err))
		return
	}
	s.onChange(r, name, quotaChanges(was, now))
	writeJSON(w, http.StatusOK, newQuotaView(name, now))
}

// deleteGlobal removes the quota's definition from Redis: every node goes
// back to its own configuration.
func (s *Server) deleteGlobal(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name, q, aerr := s.globalQuota(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), globalTimeout)
	defer cancel()
	was := q.Quota()
	now, err := q.Undefine(ctx)
	if err != nil {
		writeError(w, redisError(err))
		return
	}
	s.onChange(r, name, quotaChanges(was, now), "back to the configured quota")
	writeJSON(w, http.StatusOK, newQuotaView(name, now))
}

// redisError is the answer to a definition Redis did not take: the
// amounts' fault (422), or Redis's (503).
func redisError(err error) *apiError {
	if errors.Is(err, gate.ErrInvalidQuota) {
		return errorf(http.StatusUnprocessableEntity, "admin: "+err.Error())
	}
	return errorf(http.StatusServiceUnavailable, "admin: redis did not take the change, nothing is changed: "+err.Error())
}

// decodeQuota applies a PATCH body of amounts ({"rate": 50, "burst": 10},
// or {"limit": 600, "window": "1m"}) onto cur. Unknown fields and values of
// the wrong type are refused by name.
func decodeQuota(cur gate.Quota, body []byte) (gate.Quota, *apiError) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return cur, errorf(http.StatusBadRequest, "admin: the body must be a JSON object of rate, burst, limit and window: "+err.Error())
	}
	if len(fields) == 0 {
		return cur, errorf(http.StatusBadRequest, "admin: nothing to change: give rate and burst, or limit and window")
	}
	var ps []problem
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		raw := fields[k]
		var err error
		switch k {
		case "rate":
			err = json.Unmarshal(raw, &cur.Rate)
		case "burst":
			err = json.Unmarshal(raw, &cur.Burst)
		case "limit":
			err = json.Unmarshal(raw, &cur.Limit)
		case "window":
			var d configs.Duration
			err = json.Unmarshal(raw, &d)
			cur.Window = time.Duration(d)
		default:
			ps = append(ps, problem{Field: k, Error: "unknown field: a global quota's definition has rate, burst, limit and window"})
			continue
		}
		if err != nil {
			ps = append(ps, problem{Field: k, Error: "bad value " + string(raw) + ": " + err.Error()})
		}
	}
	if len(ps) > 0 {
		return cur, problems(http.StatusBadRequest, ps)
	}
	return cur, nil
}

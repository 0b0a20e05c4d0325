package rls_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/rls"
)

const (
	ok   = rlsv3.RateLimitResponse_OK
	over = rlsv3.RateLimitResponse_OVER_LIMIT
)

// step is one request at an instant: the clock moves by advance first.
type step struct {
	advance time.Duration
	d       *rlv3.RateLimitDescriptor
	want    rlsv3.RateLimitResponse_Code
}

func runSteps(t *testing.T, e *env, steps []step) {
	t.Helper()
	for i, s := range steps {
		e.clock.Advance(s.advance)
		resp := e.ask(t, request("edge", 0, s.d))
		if got := resp.GetStatuses()[0].GetCode(); got != s.want || resp.GetOverallCode() != s.want {
			t.Fatalf("step %d (t0+%v, %v): %v (overall %v), want %v", i+1, e.clock.Now().Sub(t0), s.d.GetEntries(), got, resp.GetOverallCode(), s.want)
		}
	}
}

func TestFixedWindowAtFixedInstants(t *testing.T) {
	e := newEnv(t, edgeGroups, rls.Params{Mapping: edgeMapping})
	a, b := desc("remote_address", "192.0.2.1"), desc("remote_address", "192.0.2.2")
	runSteps(t, e, []step{
		{0, a, ok}, {0, a, ok}, {time.Second, a, ok}, // three of 3 per 10s
		{0, a, over}, {8999 * time.Millisecond, a, over}, // t0+9.999s: still the first window
		{0, b, ok},                // another client has its own quota
		{time.Millisecond, a, ok}, // t0+10s: a new window
		{0, a, ok}, {0, a, ok}, {0, a, over},
	})
}

func TestTokenBucketAtFixedInstants(t *testing.T) {
	e := newEnv(t, edgeGroups, rls.Params{Mapping: edgeMapping})
	c := desc("generic_key", "checkout")
	runSteps(t, e, []step{
		{0, c, ok}, {0, c, ok}, {0, c, ok}, {0, c, ok}, // the burst of 4
		{0, c, over},
		{499 * time.Millisecond, c, over}, // 2/s: a token every 500ms
		{time.Millisecond, c, ok},
		{0, c, over},
		{2 * time.Second, c, ok}, {0, c, ok}, {0, c, ok}, {0, c, ok}, {0, c, over}, // 2s refill the burst
	})
}

func TestOverLimitCarriesTheFigures(t *testing.T) {
	e := newEnv(t, edgeGroups, rls.Params{Mapping: edgeMapping})
	a := desc("remote_address", "192.0.2.1")
	for range 3 {
		e.ask(t, request("edge", 0, a))
	}
	e.clock.Advance(4 * time.Second)
	resp := e.ask(t, request("edge", 0, a))
	st := resp.GetStatuses()[0]
	l := st.GetCurrentLimit()
	if st.GetCode() != over || l.GetName() != "per-client" || l.GetRequestsPerUnit() != 3 ||
		l.GetUnit() != rlsv3.RateLimitResponse_RateLimit_SECOND || l.GetUnitMultiplier().GetValue() != 10 {
		t.Fatalf("status %v, want OVER_LIMIT with 3 per 10 seconds", st)
	}
	if st.GetLimitRemaining() != 0 || st.GetDurationUntilReset().AsDuration() != 6*time.Second {
		t.Fatalf("remaining %d, reset %v; want 0, 6s", st.GetLimitRemaining(), st.GetDurationUntilReset().AsDuration())
	}
	h := headers(resp)
	ra, _ := strconv.Atoi(first(h["Retry-After"]))
	if first(h["RateLimit-Policy"]) != `"per-client";q=3;w=10` || first(h["RateLimit"]) != `"per-client";r=0;t=6` ||
		ra < 6 || ra > 9 || first(h["Sluice-Reason"]) != "rate" || len(h) != 4 {
		t.Fatalf("headers %v", h)
	}
	st2 := e.svc.Stats()
	if st2.OverLimit != 1 || st2.OK != 3 || st2.Calls != 4 {
		t.Fatalf("stats %+v", st2)
	}
	want := []rls.GroupStats{{Name: "checkout"}, {Name: "open"}, {Name: "per-client", OK: 3, OverLimit: 1}}
	if !slices.Equal(st2.Groups, want) {
		t.Fatalf("groups %+v, want %+v", st2.Groups, want)
	}
	if gs, _ := e.gate.Group("per-client"); gs.Rejected[adaptive.RejectRate] != 1 {
		t.Fatalf("the gate counted rejections %v, want one rate", gs.Rejected)
	}
}

func TestOKCarriesTheFigures(t *testing.T) {
	e := newEnv(t, edgeGroups, rls.Params{Mapping: edgeMapping})
	a := desc("remote_address", "192.0.2.1")
	for i, want := range []uint32{2, 1, 0} {
		st := e.ask(t, request("edge", 0, a)).GetStatuses()[0]
		if st.GetCode() != ok || st.GetLimitRemaining() != want || st.GetCurrentLimit().GetRequestsPerUnit() != 3 ||
			st.GetDurationUntilReset().AsDuration() != 10*time.Second {
			t.Fatalf("call %d: %v, want OK with %d remaining of 3 per 10s", i+1, st, want)
		}
	}
}

func TestHitsAddendIsTheCost(t *testing.T) {
	e := newEnv(t, edgeGroups, rls.Params{Mapping: edgeMapping})
	c := desc("generic_key", "checkout")
	if got := e.ask(t, request("edge", 3, c)).GetStatuses()[0]; got.GetCode() != ok || got.GetLimitRemaining() != 1 {
		t.Fatalf("3 hits of a burst of 4: %v", got)
	}
	if got := e.ask(t, request("edge", 2, c)).GetOverallCode(); got != over {
		t.Fatalf("2 more hits: %v, want OVER_LIMIT", got)
	}
	// A descriptor's own hits_addend wins over the request's.
	if got := e.ask(t, request("edge", 5, withHits(c, 1))).GetOverallCode(); got != ok {
		t.Fatalf("a descriptor's hits_addend of 1: %v, want OK", got)
	}
}

func TestUnknownDomainAndDescriptorAreOKWithoutLimit(t *testing.T) {
	e := newEnv(t, edgeGroups, rls.Params{Mapping: edgeMapping})
	for _, req := range []*rlsv3.RateLimitRequest{
		request("elsewhere", 0, desc("remote_address", "192.0.2.1")),
		request("edge", 0, desc("remote_address", "192.0.2.1", "path", "/x")), // more entries than mapped
		request("edge", 0, desc("generic_key", "other")),
		request("edge", 0, desc("destination_cluster", "api")),
		request("edge", 0, desc("tenant", "t1", "header_match", "basic", "path", "/")),
	} {
		for range 5 { // well past any quota
			resp := e.ask(t, req)
			st := resp.GetStatuses()[0]
			if resp.GetOverallCode() != ok || st.GetCode() != ok || st.GetCurrentLimit() != nil || len(resp.GetResponseHeadersToAdd()) != 0 {
				t.Fatalf("%v: %v, want OK with no limit", req, resp)
			}
		}
	}
	if st := e.svc.Stats(); st.UnknownDomain != 5 || st.Unmatched != 20 || st.OK != 0 {
		t.Fatalf("stats %+v", st)
	}
	// A mapped group without a rate limit allows everything.
	for range 10 {
		if resp := e.ask(t, request("edge", 0, desc("generic_key", "open"))); resp.GetOverallCode() != ok {
			t.Fatalf("a group without a rate limit: %v", resp)
		}
	}
}

func TestOneDescriptorOverMakesTheRequestOver(t *testing.T) {
	e := newEnv(t, edgeGroups, rls.Params{Mapping: edgeMapping})
	a := desc("remote_address", "192.0.2.9")
	for range 3 {
		e.ask(t, request("edge", 0, a))
	}
	resp := e.ask(t, request("edge", 0, desc("generic_key", "other"), desc("generic_key", "checkout"), a))
	codes := []rlsv3.RateLimitResponse_Code{}
	for _, st := range resp.GetStatuses() {
		codes = append(codes, st.GetCode())
	}
	if resp.GetOverallCode() != over || codes[0] != ok || codes[1] != ok || codes[2] != over {
		t.Fatalf("codes %v overall %v, want OK, OK, OVER_LIMIT in the descriptors' order", codes, resp.GetOverallCode())
	}
	h := headers(resp)
	pol := h["RateLimit-Policy"]
	if len(pol) != 2 || !strings.HasPrefix(pol[0], `"checkout";`) || !strings.HasPrefix(pol[1], `"per-client";`) || len(h["Retry-After"]) != 1 {
		t.Fatalf("headers %v: want the policies of the two descriptors with a limit, in order, and one Retry-After", h)
	}
}

func TestWildcardEntriesMakeTheKey(t *testing.T) {
	e := newEnv(t, edgeGroups, rls.Params{Mapping: edgeMapping})
	// tenant and path are wildcards: (t1, /a) and (t1, /b) are two keys.
	ta := desc("tenant", "t1", "header_match", "premium", "path", "/a")
	tb := desc("tenant", "t1", "header_match", "premium", "path", "/b")
	for range 3 {
		e.ask(t, request("edge", 0, ta))
	}
	if got := e.ask(t, request("edge", 0, ta)).GetOverallCode(); got != over {
		t.Fatalf("(t1, /a) after three: %v", got)
	}
	if got := e.ask(t, request("edge", 0, tb)).GetOverallCode(); got != ok {
		t.Fatalf("(t1, /b): %v, want OK: a key of its own", got)
	}
	// The same value as a remote_address is another descriptor, but the
	// same group and key space: "t1\x1f/a" is not "t1".
	if got := e.ask(t, request("edge", 0, desc("remote_address", "t1"))).GetOverallCode(); got != ok {
		t.Fatalf("remote_address t1: %v", got)
	}
}

func TestMalformedRequestsAreInvalidArgument(t *testing.T) {
	e := newEnv(t, edgeGroups, rls.Params{Mapping: edgeMapping})
	many := make([]*rlv3.RateLimitDescriptor, rls.MaxDescriptors+1)
	for i := range many {
		many[i] = desc("remote_address", "192.0.2.1")
	}
	long := desc()
	for range rls.MaxEntries + 1 {
		long.Entries = append(long.Entries, &rlv3.RateLimitDescriptor_Entry{Key: "k", Value: "v"})
	}
	for _, c := range []struct {
		req  *rlsv3.RateLimitRequest
		want string
	}{
		{nil, "no request"},
		{request("", 0, desc("remote_address", "x")), "domain required"},
		{request("edge", 0), "at least one descriptor"},
		{request("edge", 0, desc()), "at least 1 item"},
		{request("edge", 0, desc("", "x")), "at least 1 runes"},
		{request("edge", 0, many...), "at most 64"},
		{request("edge", 0, long), "at most 16"},
		{request("edge", 0, nil), "empty"},
		{&rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{{Entries: []*rlv3.RateLimitDescriptor_Entry{nil}}}}, "empty"},
	} {
		_, err := e.svc.ShouldRateLimit(context.Background(), c.req)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want InvalidArgument about %q", c.req, err, c.want)
		}
	}
	if st := e.svc.Stats(); st.Invalid != 9 {
		t.Fatalf("stats %+v", st)
	}
}

func TestShadowAnswersOKAndKeepsTheFigures(t *testing.T) {
	shadowed := map[string]bool{"per-client": true}
	e := newEnv(t, edgeGroups, rls.Params{Mapping: edgeMapping, Shadow: func(g string) bool { return shadowed[g] }})
	a := desc("remote_address", "192.0.2.1")
	for range 3 {
		e.ask(t, request("edge", 0, a))
	}
	resp := e.ask(t, request("edge", 0, a))
	st := resp.GetStatuses()[0]
	h := headers(resp)
	if resp.GetOverallCode() != ok || st.GetCode() != ok || st.GetCurrentLimit().GetRequestsPerUnit() != 3 ||
		len(h["Retry-After"]) != 0 || first(h["RateLimit"]) != `"per-client";r=0;t=10` {
		t.Fatalf("shadowed: %v, headers %v; want OK with the figures and no Retry-After", resp, h)
	}
	if st := e.svc.Stats(); st.Shadowed != 1 || st.OverLimit != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestShadowModeOfTheConfig: a rate rule with mode = "shadow" is answered
// OK past its limit as the hook's is, and the gate counts the would-be
// rejection (and no real one).
func TestShadowModeOfTheConfig(t *testing.T) {
	groups := strings.Replace(edgeGroups, `window = "10s"`, `window = "10s"`+"\n  mode = \"shadow\"", 1)
	e := newEnv(t, groups, rls.Params{Mapping: edgeMapping})
	a := desc("remote_address", "192.0.2.1")
	for range 5 {
		resp := e.ask(t, request("edge", 0, a))
		if h := headers(resp); resp.GetOverallCode() != ok || len(h["Retry-After"]) != 0 {
			t.Fatalf("shadowed rule: %v, headers %v; want OK and no Retry-After", resp, h)
		}
	}
	if st := e.svc.Stats(); st.Shadowed != 2 || st.OverLimit != 0 || st.OK != 3 {
		t.Fatalf("stats %+v; want 3 ok, 2 shadowed", st)
	}
	g, _ := e.gate.Group("per-client")
	if g.Shadow.Rejected[adaptive.RejectRate] != 2 || g.Rejected[adaptive.RejectRate] != 0 {
		t.Fatalf("gate: %d would-be, %d real rate rejections; want 2, 0", g.Shadow.Rejected[adaptive.RejectRate], g.Rejected[adaptive.RejectRate])
	}
}

func TestNegativeHitsSpendNothing(t *testing.T) {
	e := newEnv(t, edgeGroups, rls.Params{Mapping: edgeMapping})
	a := desc("remote_address", "192.0.2.1")
	refund := desc("remote_address", "192.0.2.1")
	refund.IsNegativeHits = true
	for range 10 {
		if got := e.ask(t, request("edge", 1, refund)).GetOverallCode(); got != ok {
			t.Fatalf("refund: %v", got)
		}
	}
	runSteps(t, e, []step{{0, a, ok}, {0, a, ok}, {0, a, ok}, {0, a, over}})
	if st := e.svc.Stats(); st.Refunds != 10 {
		t.Fatalf("stats %+v", st)
	}
}

func TestHeaderStyles(t *testing.T) {
	for _, c := range []struct {
		style rls.Headers
		want  map[string]string
	}{
		{rls.HeadersXRateLimit, map[string]string{"X-RateLimit-Limit": "3, 3;w=10", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "10", "Sluice-Reason": "rate"}},
		{rls.HeadersNone, map[string]string{}},
	} {
		m := edgeMapping
		m.Headers = c.style
		e := newEnv(t, edgeGroups, rls.Params{Mapping: m})
		a := desc("remote_address", "192.0.2.1")
		for range 3 {
			e.ask(t, request("edge", 0, a))
		}
		h := headers(e.ask(t, request("edge", 0, a)))
		for k, v := range c.want {
			if first(h[k]) != v {
				t.Errorf("%v: %s = %q, want %q (all: %v)", c.style, k, first(h[k]), v, h)
			}
		}
		n := len(c.want)
		if c.style == rls.HeadersXRateLimit {
			n++ // and Retry-After, jittered
		}
		if len(h) != n {
			t.Errorf("%v: headers %v, want %d fields", c.style, h, n)
		}
	}
	for _, s := range []string{"ietf", "x-ratelimit", "none"} {
		if h, err := rls.ParseHeaders(s); err != nil || h.String() != s {
			t.Errorf("ParseHeaders(%q) = %v, %v", s, h, err)
		}
	}
	if _, err := rls.ParseHeaders("IETF"); err == nil {
		t.Error("ParseHeaders(IETF) succeeded")
	}
}

func TestMappingProblems(t *testing.T) {
	e := newEnv(t, edgeGroups, rls.Params{})
	bad := rls.Mapping{Headers: 7, Domains: []rls.Domain{
		{Name: "", Descriptors: []rls.Descriptor{{Entries: []rls.Entry{{Key: "a"}}, Group: "open"}}},
		{Name: "edge", Descriptors: []rls.Descriptor{
			{Group: "open"},
			{Entries: []rls.Entry{{Key: ""}}, Group: "open"},
			{Entries: []rls.Entry{{Key: "a"}}},
			{Entries: []rls.Entry{{Key: "b", Value: "1"}}, Group: "nope"},
			{Entries: []rls.Entry{{Key: "b", Value: "1"}}, Group: "open"},
			{Entries: make([]rls.Entry, rls.MaxEntries+1), Group: "open"},
		}},
		{Name: "edge"},
	}}
	err := e.svc.SetMapping(bad)
	if err == nil {
		t.Fatal("SetMapping of a bad mapping succeeded")
	}
	for _, want := range []string{"headers 7", "domain 1: name required", "descriptor 1: entries required", "descriptor 2, entry 1: key required",
		"descriptor 3: group required", `no group "nope"`, "descriptor 5: the same entries as descriptor 4", "17 entries", `domain 3 ("edge"): named twice`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// The running mapping stays.
	if resp := e.ask(t, request("edge", 0, desc("a", "x"))); resp.GetStatuses()[0].GetCurrentLimit() != nil {
		t.Fatal("a refused mapping was applied")
	}
	if err := e.svc.SetMapping(edgeMapping); err != nil {
		t.Fatal(err)
	}
	a := desc("remote_address", "192.0.2.1")
	runSteps(t, e, []step{{0, a, ok}, {0, a, ok}, {0, a, ok}, {0, a, over}})
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

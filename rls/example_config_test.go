package rls_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/rls"
)

const exampleDir = "../configs/examples/envoy/"

// exampleService loads sluice.toml as the daemon does (configs.Load): its
// groups into a gate, its [rls] mapping (MappingOf) into a service on it.
func exampleService(t *testing.T) (*rls.Service, string) {
	cfg, err := configs.Load(exampleDir + "sluice.toml")
	if err != nil {
		t.Fatalf("sluice.toml: %v", err)
	}
	if cfg.RLS == nil {
		t.Fatal("sluice.toml has no [rls] section")
	}
	g, err := gate.New(gate.Params{Config: cfg.Gate(), Resources: gate.NoResources})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := rls.New(rls.Params{Gate: g, Mapping: rls.MappingOf(cfg.RLS)})
	if err != nil {
		t.Fatalf("the mapping of sluice.toml: %v", err)
	}
	if _, err := rls.NewServer(rls.ServerParams{Service: svc, Listen: cfg.RLS.Listen}); err != nil {
		t.Fatalf("rls.listen: %v", err)
	}
	return svc, cfg.RLS.Listen
}

// envoyBootstrap decodes envoy.yaml strictly with Envoy's API types.
func envoyBootstrap(t *testing.T) *bootstrapv3.Bootstrap {
	src, err := os.ReadFile(exampleDir + "envoy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := yaml.Unmarshal(src, &doc); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var b bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(js, &b); err != nil {
		t.Fatalf("envoy.yaml is not an Envoy v3 bootstrap: %v", err)
	}
	if err := b.Validate(); err != nil {
		t.Fatalf("envoy.yaml: %v", err)
	}
	return &b
}

// descriptorOf builds the descriptor Envoy sends for one rate_limits entry
// of a request from client to a route, with headers h; ok is false when
// Envoy would send none (an action that does not apply).
func descriptorOf(rl *routev3.RateLimit, client string, h map[string]string) (*rlv3.RateLimitDescriptor, bool) {
	d := &rlv3.RateLimitDescriptor{}
	add := func(k, v string) { d.Entries = append(d.Entries, &rlv3.RateLimitDescriptor_Entry{Key: k, Value: v}) }
	for _, a := range rl.GetActions() {
		switch {
		case a.GetRemoteAddress() != nil:
			add("remote_address", client)
		case a.GetGenericKey() != nil:
			k := a.GetGenericKey().GetDescriptorKey()
			if k == "" {
				k = "generic_key"
			}
			add(k, a.GetGenericKey().GetDescriptorValue())
		case a.GetRequestHeaders() != nil:
			v, ok := h[a.GetRequestHeaders().GetHeaderName()]
			if !ok {
				return nil, false
			}
			add(a.GetRequestHeaders().GetDescriptorKey(), v)
		case a.GetHeaderValueMatch() != nil:
			m := a.GetHeaderValueMatch()
			for _, hm := range m.GetHeaders() {
				if h[hm.GetName()] != hm.GetStringMatch().GetExact() {
					return nil, false
				}
			}
			k := m.GetDescriptorKey()
			if k == "" {
				k = "header_match"
			}
			add(k, m.GetDescriptorValue())
		default:
			panic("descriptorOf: an action the example does not use: " + a.String())
		}
	}
	return d, true
}

// TestEnvoyExampleAgreesWithSluiceExample: every descriptor envoy.yaml's
// routes send is one sluice.toml maps, in the domain and on the socket the
// two files name.
func TestEnvoyExampleAgreesWithSluiceExample(t *testing.T) {
	svc, listen := exampleService(t)
	b := envoyBootstrap(t)
	var hcm hcmv3.HttpConnectionManager
	if err := b.GetStaticResources().GetListeners()[0].GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		t.Fatal(err)
	}
	var filter ratelimitv3.RateLimit
	if err := hcm.GetHttpFilters()[0].GetTypedConfig().UnmarshalTo(&filter); err != nil {
		t.Fatal(err)
	}
	cluster := filter.GetRateLimitService().GetGrpcService().GetEnvoyGrpc().GetClusterName()
	pipe := ""
	for _, c := range b.GetStaticResources().GetClusters() {
		if c.GetName() == cluster {
			pipe = c.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetPipe().GetPath()
		}
	}
	if "unix://"+pipe != listen {
		t.Fatalf("Envoy's cluster %q reaches %q; sluice listens on %q", cluster, pipe, listen)
	}
	headers := map[string]string{"x-tenant": "acme", "x-plan": "premium"}
	sent := 0
	for _, route := range hcm.GetRouteConfig().GetVirtualHosts()[0].GetRoutes() {
		req := &rlsv3.RateLimitRequest{Domain: filter.GetDomain()}
		for _, rl := range route.GetRoute().GetRateLimits() {
			if d, ok := descriptorOf(rl, "203.0.113.5", headers); ok {
				req.Descriptors = append(req.Descriptors, d)
			}
		}
		sent += len(req.Descriptors)
		resp, err := svc.ShouldRateLimit(context.Background(), req)
		if err != nil {
			t.Fatalf("route %s: %v", route.GetMatch().GetPrefix(), err)
		}
		if resp.GetOverallCode().String() != "OK" {
			t.Fatalf("route %s: %v", route.GetMatch().GetPrefix(), resp)
		}
	}
	if st := svc.Stats(); sent != 4 || st.UnknownDomain != 0 || st.Unmatched != 0 || st.OK != 4 {
		t.Fatalf("%d descriptors sent; stats %+v: every one must be mapped", sent, st)
	}
}

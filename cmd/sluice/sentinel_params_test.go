package main

import (
	"slices"
	"testing"

	"github.com/sluicehq/sluice/configs"
)

// TestStoreParamsSentinel: [redis] sentinel_addresses and master_name reach
// the store, which then finds the master through the sentinels.
func TestStoreParamsSentinel(t *testing.T) {
	r := configs.NewRedis()
	r.SentinelAddresses, r.MasterName = []string{"10.0.0.1:26379", "10.0.0.2:26379"}, "quotas"
	p := storeParams(r)
	if !slices.Equal(p.SentinelAddresses, r.SentinelAddresses) || p.MasterName != "quotas" || p.Address != "" || len(p.ClusterAddresses) != 0 {
		t.Errorf("%+v", p)
	}
	if err := p.Validate(); err != nil {
		t.Error(err)
	}
}

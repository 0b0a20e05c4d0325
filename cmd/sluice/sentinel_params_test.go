package main

import (
	"slices"
	"testing"

	"github.com/sluicehq/sluice/configs"
)

// TestStoreParamsSentinel: [redis] sentinel_addresses, master_name and
// sentinel_password_file reach the store, which then finds the master
// through the sentinels (authenticating to them with the sentinels' own
// password, the master with password_file's).
func TestStoreParamsSentinel(t *testing.T) {
	r := configs.NewRedis()
	r.SentinelAddresses, r.MasterName = []string{"10.0.0.1:26379", "10.0.0.2:26379"}, "quotas"
	r.SentinelPasswordFile, r.PasswordFile = "/etc/sluice/sentinel-password", "/etc/sluice/redis-password"
	p := storeParams(r)
	if !slices.Equal(p.SentinelAddresses, r.SentinelAddresses) || p.MasterName != "quotas" || p.Address != "" || len(p.ClusterAddresses) != 0 ||
		p.SentinelPasswordFile != r.SentinelPasswordFile || p.PasswordFile != r.PasswordFile || p.SentinelPassword != "" {
		t.Errorf("%+v", p)
	}
	if err := p.Validate(); err != nil {
		t.Error(err)
	}
}

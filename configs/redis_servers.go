package configs

// checkServers checks how [redis] reaches Redis: one server (address), a
// cluster (cluster_addresses) or a master its sentinels watch
// (sentinel_addresses with master_name, and sentinel_password_file if the
// sentinels ask a password), exactly one of them.
func (r *Redis) checkServers(ck *checker, p string) {
	ways := []struct {
		key string
		set bool
	}{
		{"address", r.Address != ""},
		{"cluster_addresses", len(r.ClusterAddresses) > 0},
		{"sentinel_addresses", len(r.SentinelAddresses) > 0},
	}
	var set []string
	for _, w := range ways {
		if w.set {
			set = append(set, w.key)
		}
	}
	switch len(set) {
	case 0:
		ck.incompletef(p, "needs address (one server), cluster_addresses (a cluster) or sentinel_addresses with master_name (a master the sentinels watch)")
	case 1:
	default:
		ck.errorf(join(p, set[1]), "set only one of address, cluster_addresses and sentinel_addresses, got %s and %s", set[0], set[1])
	}
	if r.Address != "" {
		ck.hostPort(join(p, "address"), r.Address)
	}
	for i, a := range r.ClusterAddresses {
		ck.hostPort(index(join(p, "cluster_addresses"), i), a)
	}
	for i, a := range r.SentinelAddresses {
		ck.hostPort(index(join(p, "sentinel_addresses"), i), a)
	}
	switch {
	case len(r.SentinelAddresses) > 0 && r.MasterName == "":
		ck.errorf(join(p, "master_name"), "required with sentinel_addresses: the master's name in the sentinels' configuration")
	case len(r.SentinelAddresses) == 0 && r.MasterName != "":
		ck.errorf(join(p, "master_name"), "only used with sentinel_addresses")
	}
	if len(r.SentinelAddresses) == 0 && r.SentinelPasswordFile != "" {
		ck.errorf(join(p, "sentinel_password_file"), "only used with sentinel_addresses: the sentinels' own password (the master's is password_file)")
	}
}

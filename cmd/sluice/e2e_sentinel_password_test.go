package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
)

// TestE2ESentinelPassword: the binary reaches a master through a
// redis-sentinel that asks a password of its own (requirepass), given by
// [redis] sentinel_password_file, while password_file holds the master's:
// under load the node leases from the master (which runs its renewal
// scripts).
func TestE2ESentinelPassword(t *testing.T) {
	const rate = 300.0
	redistest.Need(t, "redis-sentinel")
	master := redistest.New(t)
	master.Password = "master-secret"
	master.Start()
	sentinel := redistest.StartSentinelAuth(t, master, "quotas", 1, "sentinel-secret")
	dir := t.TempDir()
	masterFile, sentinelFile := filepath.Join(dir, "redis-password"), filepath.Join(dir, "sentinel-password")
	for file, secret := range map[string]string{masterFile: "master-secret\n", sentinelFile: "sentinel-secret\n"} {
		if err := os.WriteFile(file, []byte(secret), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	up := startArrivals(t)
	lines := fmt.Sprintf("sentinel_addresses = [%q]\nmaster_name = \"quotas\"\npassword_file = %q\nsentinel_password_file = %q",
		sentinel.Addr(), masterFile, sentinelFile)
	nodes := leasedNodes(t, 1, lines, up, rate, rate/10, time.Second)
	_, before := commandCalls(t, master.Client())
	c := client(t)
	l := startPaced(t, nodes, []float64{rate})
	defer l.halt()
	awaitRenewals(t, c, nodes, nil, "leases from the master the sentinel names")
	l.halt()
	if by, n := commandCalls(t, master.Client()); n == before || by["evalsha"]+by["eval"] == 0 {
		t.Errorf("the master ran no script of the node: %v", by)
	}
}

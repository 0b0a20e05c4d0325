package client_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/gate/spec"
)

// The package stands alone: it links nothing of sluice's but itself, and
// no gRPC (that is client/grpcclient's, which links client only).
func TestLinksNoDaemon(t *testing.T) {
	for pkg, allowed := range map[string][]string{
		".":            {"github.com/sluicehq/sluice/client"},
		"./grpcclient": {"github.com/sluicehq/sluice/client", "github.com/sluicehq/sluice/client/grpcclient"},
	} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			ours := strings.HasPrefix(dep, "github.com/sluicehq/sluice")
			if ours && !contains(allowed, dep) {
				t.Errorf("%s links %s", pkg, dep)
			}
			if pkg == "." && strings.HasPrefix(dep, "google.golang.org/grpc") {
				t.Errorf("%s links %s", pkg, dep)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// The priorities are the gate's levels. (That the default header names are
// those the lab's load sends is checked by the lab, which imports client.)
func TestNamesAreSluices(t *testing.T) {
	for _, p := range []client.Priority{client.PriorityCritical, client.PriorityDefault, client.PrioritySheddable} {
		if l, ok := spec.ParseLevel(string(p)); !ok || string(l) != string(p) {
			t.Errorf("priority %q is not a gate level", p)
		}
	}
}

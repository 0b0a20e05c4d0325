package load

import (
	"testing"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/cmd/internal/lab/backend"
)

// The lab's load sends a tenant and a priority in the headers that the
// client half sends by default, so that a config written for one serves
// the other.
func TestHeadersAreTheClients(t *testing.T) {
	if client.DefaultHeaders.Tenant != backend.TenantHeader || client.DefaultHeaders.Priority != backend.PriorityHeader {
		t.Errorf("client's default headers %+v, the lab's %q and %q", client.DefaultHeaders, backend.TenantHeader, backend.PriorityHeader)
	}
}

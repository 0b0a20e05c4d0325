package permit_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/permit"
	"github.com/sluicehq/sluice/permit/permitclient"
)

// A permit service on a unix socket in front of a group of two slots, and a
// client that takes permits for its jobs: the third at once is refused.
func Example() {
	cfg, _ := configs.Parse("", []byte(`
[upstream]
url = "http://127.0.0.1:9000"
[[group]]
name = "jobs"
  [group.concurrency]
  law = "fixed"
  limit = 2
  [group.queue]
  max = 0
`))
	g, _ := gate.New(gate.Params{Config: cfg.Gate(), Resources: gate.NoResources})
	svc, _ := permit.New(permit.Params{Gate: g})
	dir, _ := os.MkdirTemp("", "permit")
	defer os.RemoveAll(dir)
	sock := "unix://" + filepath.Join(dir, "permit.sock")
	srv, _ := permit.NewServer(permit.ServerParams{Service: svc, Listen: sock})
	ln, _ := srv.Listen()
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())

	c, _ := permitclient.New(sock, permitclient.Options{})
	defer c.Close()
	ctx := context.Background()
	a, _ := c.Acquire(ctx, permitclient.Request{Group: "jobs", Key: "tenant-1"})
	b, _ := c.Acquire(ctx, permitclient.Request{Group: "jobs", Key: "tenant-2"})
	fmt.Println("granted:", a.Group, a.Lease, b.Group, b.Lease)

	_, err := c.Acquire(ctx, permitclient.Request{Group: "jobs"})
	var refused *permitclient.RefusedError
	if errors.As(err, &refused) {
		fmt.Println("refused:", refused.Reason, refused.Status)
	}

	fmt.Println("released:", a.Done(permitclient.Success), b.Done(permitclient.OutcomeOf(context.DeadlineExceeded)))
	again, err := c.Acquire(ctx, permitclient.Request{Group: "jobs"})
	fmt.Println("granted again:", err == nil, again.Done(permitclient.Success))
	// Output:
	// granted: jobs 30s jobs 30s
	// refused: concurrency 503
	// released: <nil> <nil>
	// granted again: true <nil>
}

package admin_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/admin"
	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
)

// The wiring of `sluice run`: Metrics first, since the gate feeds them; the
// gate; then the admin server, listening before anything else starts so a
// taken port fails the start; Serve until shutdown; SIGHUP reloads through
// the server so that kept overrides and the reload counter hold.
func Example() {
	cfg, err := configs.Parse("sluice.toml", []byte(`
[upstream]
url = "http://127.0.0.1:9000"
[admin]
listen = "127.0.0.1:0"
[[group]]
name = "api"
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	metrics := admin.NewMetrics(admin.MetricsParams{})
	g, err := gate.New(gate.Params{
		Config:       cfg.Gate(),
		ConfigSource: "sluice.toml",
		ConfigHash:   cfg.Hash(),
		Resources:    gate.NoResources, // a *probe.Sampler in the daemon
		Observer:     metrics,
		OnChange:     metrics.ObserveChange, // after logging the change
		OnSave:       metrics.ObserveSave,   // after logging the save
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv, err := admin.New(admin.Params{
		Gate:    g,
		Config:  cfg,
		Listen:  cfg.Admin.Listen,
		Token:   "", // admin.ReadTokenFile(cfg.Admin.TokenFile) when set
		Version: "v1.0.0",
		Metrics: metrics,
		Load: func(context.Context) (*configs.Config, error) {
			return configs.Load("sluice.toml")
		},
		Ready: func() error { return nil }, // nil once the upstream has answered
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ln, err := srv.Listen()
	if err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()

	resp, err := http.Get("http://" + srv.Addr().String() + "/readyz")
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(resp.StatusCode, " ", string(body))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
	fmt.Println(<-done)
	// Output:
	// 200 {
	//   "status": "ready"
	// }
	// http: Server closed
}

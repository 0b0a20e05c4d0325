package admin

import (
	"context"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/probe"
)

// chromiumPath is where Debian's chromium lives (installed here and by .ci/run).
const chromiumPath = "/usr/bin/chromium"

// artifactsDir is where the dashboard screenshot is written:
// $SLUICE_ARTIFACTS if set, else testdata/artifacts at the repository root
// (ignored by git).
func artifactsDir(t *testing.T) string {
	if d := os.Getenv("SLUICE_ARTIFACTS"); d != "" {
		return d
	}
	d, err := filepath.Abs(filepath.Join("..", "testdata", "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// daemon is an in-process sluice: a real upstream on loopback whose latency
// grows with its load, a gate with a real config, its control loop, a front
// server guarding a reverse proxy with gate.Middleware, the admin server, and
// clients sending traffic through the front until stopped.
type daemon struct {
	admin string // the admin API's URL
	stop  func()
}

const browserConfig = `
[upstream]
url = "%s"

[control]
interval = "100ms"

[[group]]
name = "api"
match = { path_prefix = "/api/" }
  [group.rate]
  rate = 400
  [group.concurrency]
  law = "target"
  initial = 6
  min = 2
  max = 64
  [group.targets]
  latency = "30ms"
  cpu = 0.95
  memory = 0.85
  [group.queue]
  max = 8
  max_wait = "15ms"

[[group]]
name = "batch"
key = "header:X-Client"
match = { path_prefix = "/batch/" }
  [group.concurrency]
  law = "fixed"
  limit = 2
  [group.queue]
  max = 0

[[group]]
name = "edge"
key = "header:X-Client"
mode = "shadow"
  [group.concurrency]
  law = "fixed"
  limit = 1
  [group.queue]
  max = 0
`

func startDaemon(t *testing.T) *daemon {
	t.Helper()
	var inflight atomic.Int64
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		// A service whose latency grows with its concurrency, with noise.
		// This is the model's service time (the load the dashboard shows),
		// not a wait for an event; like a real handler, the work stops
		// when the client goes away.
		work := time.NewTimer(time.Duration(2+3*n)*time.Millisecond + rand.N(3*time.Millisecond))
		defer work.Stop()
		select {
		case <-work.C:
		case <-r.Context().Done():
			return
		}
		w.Write([]byte("ok\n"))
	}))

	cfg, err := configs.Parse("sluice.toml", fmt.Appendf(nil, browserConfig, upstream.URL))
	if err != nil {
		t.Fatal(err)
	}
	metrics := NewMetrics(MetricsParams{})
	g, err := gate.New(gate.Params{Config: cfg.Gate(), ConfigSource: "sluice.toml", Resources: &modelSampler{inflight: &inflight},
		Observer: metrics})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { g.Run(ctx) })

	u, _ := url.Parse(upstream.URL)
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.ErrorLog = log.New(io.Discard, "", 0) // clients cancelled at the end
	front := httptest.NewServer(gate.Middleware(g, proxy))

	srv, err := New(Params{Gate: g, Config: cfg, Listen: "127.0.0.1:0", Token: testToken, Version: "v0.0.0-browser",
		Metrics: metrics, HistoryInterval: 250 * time.Millisecond,
		Load: func(context.Context) (*configs.Config, error) { return cfg, nil }})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	// Traffic: more api clients than the target allows, and more batch
	// clients than its fixed limit, so both shed; two edge clients for a
	// limit of one, which edge, in shadow, would shed.
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	for i := range 13 {
		path := "/api/items"
		switch {
		case i >= 11:
			path = "/edge/x"
		case i >= 8:
			path = "/batch/jobs"
		}
		wg.Go(func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, front.URL+path, nil)
				req.Header.Set("X-Client", fmt.Sprint("client-", i))
				if resp, err := client.Do(req); err == nil {
					resp.Body.Close()
				}
				select { // a client's think time
				case <-ctx.Done():
				case <-time.After(time.Duration(3+rand.IntN(6)) * time.Millisecond):
				}
			}
		})
	}
	d := &daemon{admin: "http://" + ln.Addr().String()}
	d.stop = func() {
		cancel()
		wg.Wait()
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		srv.Shutdown(sctx)
		<-served
		front.Close()
		upstream.Close()
	}
	return d
}

// modelSampler reports the CPU and memory of a model service whose CPU grows
// with the requests it serves. The machine's own CPU is shared with every
// other test running, so measuring it would make the gate shed (and the test
// depend on) whatever else runs; the real sampler has its own tests in probe.
type modelSampler struct {
	inflight *atomic.Int64
}

func (m *modelSampler) Sample(now time.Time) probe.Resources {
	n := float64(m.inflight.Load())
	wobble := 0.03 * math.Sin(float64(now.UnixMilli())/1500)
	return probe.Resources{
		Time:         now,
		CPU:          probe.Signal{Value: min(0.2+0.07*n+wobble, 0.9), Known: true},
		CPUFrom:      probe.FromCgroup,
		CPUSource:    "cgroup v2 /sys/fs/cgroup/model (cpu.max 2 cores)",
		Memory:       probe.Signal{Value: 0.41 + 0.01*n + wobble/3, Known: true},
		MemoryFrom:   probe.FromCgroup,
		MemorySource: "cgroup v2 /sys/fs/cgroup/model (working set of memory.max 1 GiB)",
		CPUPressure:  probe.Signal{Reason: "model: none"}, CPUPressureSource: "none: model",
	}
}

// chartState is what the page reports of one chart.
type chartState struct {
	Points  int `json:"points"`
	Colored int `json:"colored"` // pixels of a saturated colour: series, not grid or text
	Width   int `json:"width"`
}

// readCharts reads every chart's drawn points and counts its coloured pixels.
const readCharts = `(() => {
  const out = {};
  for (const fig of document.querySelectorAll(".chart")) {
    const cv = fig.querySelector("canvas");
    const d = cv.getContext("2d").getImageData(0, 0, cv.width, cv.height).data;
    let colored = 0;
    for (let i = 0; i < d.length; i += 4) {
      const r = d[i], g = d[i + 1], b = d[i + 2], a = d[i + 3];
      if (a > 40 && Math.max(r, g, b) - Math.min(r, g, b) > 60) colored++;
    }
    out[fig.id] = { points: Number(cv.dataset.points || 0), colored, width: cv.width };
  }
  return out;
})()`

// browser is a headless Chromium tab, with the console errors it saw.
type browser struct {
	ctx      context.Context
	mu       sync.Mutex
	errs     []string
	stop     func()
	consoled chan struct{}
}

// newBrowser starts headless Chromium with a fresh profile. Without
// chromium the test is skipped, but in CI (the CI variable set) it fails.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("chromium is required in CI: %v (install Debian's chromium, as .ci/run does)", err)
		}
		t.Skipf("chromium not installed at %s: skipping the browser test (it is required in CI)", chromiumPath)
	}
	if _, err := exec.LookPath(chromiumPath); err != nil {
		t.Fatalf("%s is not executable: %v", chromiumPath, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	actx, acancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	bctx, bcancel := chromedp.NewContext(actx)
	b := &browser{ctx: bctx, consoled: make(chan struct{})}
	// Script errors and policy violations show in the console: collect them.
	console := chromedp.Console(bctx)
	go func() {
		defer close(b.consoled)
		for m, err := range console {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.mu.Lock()
				b.errs = append(b.errs, m.Text)
				b.mu.Unlock()
			}
		}
	}()
	b.stop = func() {
		bcancel()
		<-b.consoled
		acancel()
		cancel()
	}
	t.Cleanup(b.stop)
	return b
}

// open loads url in a 1440×1000 viewport.
func (b *browser) open(t *testing.T, url string) {
	t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.EmulateViewport(1440, 1000), chromedp.Navigate(url)); err != nil {
		t.Fatalf("loading %s: %v", url, err)
	}
}

// poll waits until the JavaScript expression is true: the page polls the
// API once a second, so the test waits for a state, not for a time.
func (b *browser) poll(t *testing.T, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](expr,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(45*time.Second))); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// consoleErrors stops the browser and returns the errors its console saw.
func (b *browser) consoleErrors() []string {
	b.stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.errs
}

// TestDashboardInBrowser loads the dashboard of a running daemon in headless
// Chromium: the charts draw, their values move on, the group selector and the
// time window work, and a screenshot is written (see artifactsDir).
func TestDashboardInBrowser(t *testing.T) {
	b := newBrowser(t)
	d := startDaemon(t)
	defer d.stop()
	bctx := b.ctx
	b.open(t, d.admin+"/")
	poll := func(what, expr string) { t.Helper(); b.poll(t, what, expr) }

	poll("the first updates", `window.sluice && window.sluice.updates >= 2 && window.sluice.groups.length === 3`)
	poll("latency points and a resource reading", `(() => {
	  const c = window.sluice.charts;
	  return c["c-latency"] && c["c-latency"].points > 4 && c["c-cpu"] && c["c-cpu"].points > 2 && c["c-concurrency"].points > 4;
	})()`)

	// The time window: one minute, so the few seconds of data fill more of
	// the width.
	if err := chromedp.Do(bctx, chromedp.Click(`.window button[data-window="60"]`)); err != nil {
		t.Fatal(err)
	}

	selected, err := chromedp.Run(bctx, chromedp.Evaluate[string](`window.sluice.selected`))
	if err != nil || selected != "api" {
		t.Fatalf("selected group %q (%v), want api, the first", selected, err)
	}
	charts, err := chromedp.Run(bctx, chromedp.Evaluate[map[string]chartState](readCharts))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"c-concurrency", "c-latency", "c-throughput", "c-cpu", "c-memory"} {
		c := charts[id]
		// A series of n points joined by lines colours at least n pixels.
		if c.Width == 0 || c.Points == 0 || c.Colored < c.Points {
			t.Errorf("%s: %+v, want points and drawn series", id, c)
		}
	}

	// Values move on: the page's newest point advances with the server's.
	first, err := chromedp.Run(bctx, chromedp.Evaluate[float64](`window.sluice.lastTime`))
	if err != nil {
		t.Fatal(err)
	}
	poll("a newer point", fmt.Sprintf(`window.sluice.lastTime > %f && window.sluice.updates >= 4`, first))
	// The tiles fill in: the limit, a latency at the target's quantile, CPU,
	// the version and the law's reason.
	poll("the tiles", `["t-limit", "t-lat", "t-cpu"].every((id) => !["", "–"].includes(document.getElementById(id).textContent)) &&
	  document.getElementById("version").textContent === "v0.0.0-browser" &&
	  document.getElementById("why-text").textContent.length > 0`)
	// The CPU card shows the figure the law was given at the tick its
	// reason in the why line is from, not another sample's (the model's CPU
	// wobbles from one sample to the next).
	poll("a decision with a CPU figure", `window.sluice.cards && window.sluice.cards.decision.cpu != null`)
	card, err := chromedp.Run(bctx, chromedp.Evaluate[[2]string](`(() => {
	  const c = window.sluice.cards, v = c.decision.cpu;
	  return [c.cpu, (v * 100).toFixed(v < 0.1 ? 1 : 0) + "%"];
	})()`))
	if err != nil || card[0] != card[1] {
		t.Errorf("the CPU card reads %q, the law's figure is %q (%v)", card[0], card[1], err)
	}

	// The group selector: batch, whose fixed limit sheds, draws rejections.
	if err := chromedp.Do(bctx, chromedp.Click(`#groups button[data-group="batch"]`)); err != nil {
		t.Fatal(err)
	}
	poll("batch's rejections", `window.sluice.selected === "batch" && window.sluice.charts["c-rejections"].points > 0`)
	// Who is being limited: batch's clients, by key, with the reason.
	poll("batch's most rejected keys", `/client-(8|9|10) \d+ \(\w+\)/.test(document.getElementById("who-text").textContent) &&
	  !document.getElementById("who").classList.contains("hidden")`)
	charts, err = chromedp.Run(bctx, chromedp.Evaluate[map[string]chartState](readCharts))
	if err != nil {
		t.Fatal(err)
	}
	if c := charts["c-rejections"]; c.Points == 0 || c.Colored < c.Points {
		t.Errorf("batch's rejections chart: %+v, want a drawn series", c)
	}
	// Edge, in shadow, refuses no one: who it would refuse shows apart.
	if err := chromedp.Do(bctx, chromedp.Click(`#groups button[data-group="edge"]`)); err != nil {
		t.Fatal(err)
	}
	poll("edge's would-be refused keys", `window.sluice.selected === "edge" &&
	  /client-1[12] \d+ \(concurrency\)/.test(document.getElementById("who-shadow-text").textContent) &&
	  !document.getElementById("who-shadow").classList.contains("hidden") &&
	  document.getElementById("who").classList.contains("hidden")`)

	// Back to api for the screenshot, once the history spans a quarter of
	// the window, so the picture shows a trend.
	if err := chromedp.Do(bctx, chromedp.Click(`#groups button[data-group="api"]`)); err != nil {
		t.Fatal(err)
	}
	poll("15s of history", `window.sluice.selected === "api" && window.sluice.lastTime - window.sluice.firstTime >= 15000`)
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	dir := artifactsDir(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "admin-dashboard.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))

	// No failed poll, no script error, no policy violation on the way.
	errs, err := chromedp.Run(bctx, chromedp.Evaluate[int](`window.sluice.errors`))
	if err != nil || errs != 0 {
		t.Errorf("the page saw %d failed polls (%v)", errs, err)
	}
	for _, e := range b.consoleErrors() {
		t.Errorf("console: %s", e)
	}
}

// TestDashboardAsksForTheToken serves the handler of a server set for a
// public address (every read needs the token) on loopback: the page shows
// the token form, and once the token is typed in, its data comes.
func TestDashboardAsksForTheToken(t *testing.T) {
	b := newBrowser(t)
	cfg := parseConfig(t, testConfig)
	g, err := gate.New(gate.Params{Config: cfg.Gate(), Resources: gate.NoResources})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Params{Gate: g, Config: cfg, Listen: "0.0.0.0:9901", Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler()) // loopback; the Host is an IP literal
	defer hs.Close()
	b.open(t, hs.URL+"/")
	// A page that may not read the API comes without its first state: it
	// holds no data.
	b.poll(t, "the page alone", `window.sluice && window.sluice.first === "poll" && document.getElementById("first-state") === null`)
	b.poll(t, "the token form", `window.sluice && window.sluice.errors > 0 && !document.getElementById("token").classList.contains("hidden")`)
	if err := chromedp.Do(b.ctx,
		chromedp.SendKeys(`#token-input`, testToken),
		chromedp.Click(`#token-form button`),
	); err != nil {
		t.Fatal(err)
	}
	b.poll(t, "data with the token", `window.sluice.updates >= 1 && window.sluice.groups.join() === "api,batch" && document.getElementById("token").classList.contains("hidden")`)
	// The 401s before the token are expected in the console; nothing else.
	for _, e := range b.consoleErrors() {
		if !strings.Contains(e, "401") {
			t.Errorf("console: %s", e)
		}
	}
}

// noSources reports CPU, memory and CPU pressure without a source, with the
// probe's own words for why: the longest notes the page has to show.
type noSources struct{}

func (noSources) Sample(now time.Time) probe.Resources {
	const cpu = "none: sluice's cgroup is the root cgroup /sys/fs/cgroup/cpu, the whole host: CPU utilisation has no allotment to be measured " +
		"against (cpu_pressure needs none): name the guarded service with probe.pid_file or probe.cgroup, or measure the whole host with probe.source = \"host\""
	const mem = "none: no memory limit on sluice's cgroup /sys/fs/cgroup/memory/system.slice/sluice.service or above: name the guarded service " +
		"with probe.pid_file or probe.cgroup, or measure the whole host with probe.source = \"host\""
	return probe.Resources{Time: now, CPU: probe.Signal{Reason: cpu}, CPUSource: cpu, Memory: probe.Signal{Reason: mem}, MemorySource: mem,
		CPUPressure: probe.Signal{Reason: "none: no cgroup v2"}, CPUPressureSource: "none: no cgroup v2"}
}

// TestDashboardFirstStateAndNotes: the page renders the state it came with
// as it loads (not "connecting" until its first poll, which a screenshot
// at load would show), and the long notes of signals without a source are
// read whole: the CPU card's line and the charts' notes fit their boxes.
func TestDashboardFirstStateAndNotes(t *testing.T) {
	b := newBrowser(t)
	cfg := parseConfig(t, testConfig)
	g, err := gate.New(gate.Params{Config: cfg.Gate(), Resources: noSources{}})
	if err != nil {
		t.Fatal(err)
	}
	g.Tick(time.Now()) // the first sample: the sources are known to be none
	srv, err := New(Params{Gate: g, Config: cfg, Listen: "127.0.0.1:0", Version: "v0.0.0-first"})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	b.open(t, hs.URL+"/") // returns once the page has loaded
	at, err := chromedp.Run(b.ctx, chromedp.Evaluate[[3]string](`[window.sluice.first, String(window.sluice.updates),
	  document.getElementById("live-text").textContent]`))
	if err != nil || at[0] != "page" || at[1] != "1" || at[2] == "connecting" {
		t.Fatalf("at load: first state from %q, %s updates, live %q (%v); want the page's own state rendered", at[0], at[1], at[2], err)
	}
	b.poll(t, "the groups and the version", `window.sluice.groups.join() === "api,batch" &&
	  document.getElementById("version").textContent === "v0.0.0-first"`)

	fits, err := chromedp.Run(b.ctx, chromedp.Evaluate[map[string]string](`(() => {
	  const out = {};
	  for (const id of ["t-cpu-s", "t-mem-s", "resources-note"]) {
	    const e = document.getElementById(id);
	    out[id] = e.scrollWidth <= e.clientWidth + 1 && e.textContent.length > 0 ? "" : "cut: " + e.scrollWidth + " > " + e.clientWidth + " " + JSON.stringify(e.textContent);
	  }
	  for (const id of ["c-cpu", "c-memory"]) {
	    const n = window.sluice.charts[id] && window.sluice.charts[id].note;
	    out[id] = n && n.lines.length > 1 && n.widest <= n.room && n.height <= n.plot ? "" : "cut: " + JSON.stringify(n);
	  }
	  return out;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	for id, why := range fits {
		if why != "" {
			t.Errorf("%s: %s", id, why)
		}
	}
	for _, e := range b.consoleErrors() {
		t.Errorf("console: %s", e)
	}
}

package backend

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/pause"
)

func start(t testing.TB, p Params) *Instance {
	t.Helper()
	in, err := Listen("127.0.0.1:0", p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = in.Shutdown(ctx)
	})
	return in
}

func stats(t *testing.T, url string) Stats {
	t.Helper()
	resp, err := http.Get(url + StatsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s Stats
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func get(url string, hdr ...string) (int, string, error) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	return resp.StatusCode, resp.Header.Get(ReasonHeader), nil
}

func TestServerServesAndCounts(t *testing.T) {
	in := start(t, Params{Workers: 2, Service: Dist{Kind: Const, Mean: time.Millisecond}})
	for i, tenant := range []string{"a", "a", "b"} {
		code, _, err := get(in.URL+"/work", TenantHeader, tenant, PriorityHeader, []string{"critical", "sheddable", "sheddable"}[i])
		if err != nil || code != 200 {
			t.Fatalf("request %d: %d %v", i, code, err)
		}
	}
	s := stats(t, in.URL)
	if s.Served != 3 || s.Workers != 2 || s.Capacity != 2000 || s.Slowdown != 1 {
		t.Fatalf("stats %+v", s)
	}
	if s.ByTenant["a"] != 2 || s.ByTenant["b"] != 1 || s.ByPriority["sheddable"] != 2 || s.ByPriority["critical"] != 1 {
		t.Fatalf("classes %v %v", s.ByTenant, s.ByPriority)
	}
	resp, err := http.Post(in.URL+ResetPath, "", nil)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("reset: %v %v", resp, err)
	}
	resp.Body.Close()
	if s := stats(t, in.URL); s.Served != 0 || s.ByTenant != nil {
		t.Fatalf("after reset %+v", s)
	}
	if code, _, _ := get(in.URL + ResetPath); code != http.StatusMethodNotAllowed {
		t.Fatalf("GET reset: %d", code)
	}
}

// concurrently sends n requests and waits until the backend's state
// satisfies until (checked after each queue or service event), then returns
// a function that waits for all answers.
func concurrently(t *testing.T, in *Instance, n int, until func(Stats) bool) func() (codes map[int]int, errs int) {
	t.Helper()
	changed := make(chan struct{}, 1)
	in.Server.changed = func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	var mu sync.Mutex
	codes := map[int]int{}
	errs := 0
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			code, _, err := get(in.URL + "/work")
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs++
				return
			}
			codes[code]++
		})
	}
	deadline := time.After(10 * time.Second)
	for !until(in.Stats()) {
		select {
		case <-deadline:
			t.Fatalf("backend never reached the wanted state: %+v", in.Stats())
		case <-changed:
		}
	}
	return func() (map[int]int, int) { wg.Wait(); return codes, errs }
}

// outlasting is a service time that outlasts a test's steps between two
// states of the backend it waits for, on a loaded machine too: a request in
// service that ended between them (as one of 200 ms did beside two busy
// loops) would make the next step find another state.
const outlasting = 2 * time.Second

func TestServerQueueFull(t *testing.T) {
	in := start(t, Params{Workers: 1, Queue: 2, Service: Dist{Kind: Const, Mean: outlasting}})
	wait := concurrently(t, in, 3, func(s Stats) bool { return s.InService == 1 && s.Queued == 2 })
	code, reason, err := get(in.URL + "/work")
	if err != nil || code != http.StatusServiceUnavailable || reason != "queue_full" {
		t.Fatalf("over the bound: %d %q %v", code, reason, err)
	}
	codes, errs := wait()
	if codes[200] != 3 || errs != 0 {
		t.Fatalf("queued requests: %v, %d errors", codes, errs)
	}
	if s := in.Stats(); s.QueueFull != 1 || s.Served != 3 {
		t.Fatalf("stats %+v", s)
	}
}

// TestServerCrashesOnMemory: queued requests hold memory; the one that
// would pass the limit crashes the backend, every request in it fails with
// a closed connection, and it refuses work until it has restarted.
func TestServerCrashesOnMemory(t *testing.T) {
	in := start(t, Params{
		Workers: 1, Service: Dist{Kind: Const, Mean: outlasting},
		QueuedMemory: 1 << 20, MemoryLimit: 2 << 20, RestartDelay: time.Hour,
	})
	wait := concurrently(t, in, 3, func(s Stats) bool { return s.InService == 1 && s.Queued == 2 })
	if s := in.Stats(); s.HeldBytes != 2<<20 {
		t.Fatalf("held %d, want 2 MiB", s.HeldBytes)
	}
	if _, _, err := get(in.URL + "/work"); err == nil {
		t.Fatal("request past the memory limit succeeded")
	}
	codes, errs := wait()
	if errs != 3 || len(codes) != 0 {
		t.Fatalf("requests in the crashed backend: codes %v, %d errors; want 3 errors", codes, errs)
	}
	if _, _, err := get(in.URL + "/work"); err == nil {
		t.Fatal("request while down succeeded")
	}
	s := in.Stats()
	if s.Crashes != 1 || s.Aborted != 5 || s.HeldBytes != 0 || s.PeakHeldBytes != 2<<20 || s.Served != 0 {
		t.Fatalf("stats after crash %+v", s)
	}
}

func TestNewRejectsBadParams(t *testing.T) {
	_, err := New(Params{Workers: -1, Queue: -1})
	if err == nil || !strings.Contains(err.Error(), "workers") || !strings.Contains(err.Error(), "queue") {
		t.Fatalf("New: %v", err)
	}
}

// watch returns a channel that receives after every event the backend
// notifies.
func watch(in *Instance) <-chan struct{} {
	ch := make(chan struct{}, 1)
	in.Server.changed = func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	return ch
}

func waitFor(t *testing.T, in *Instance, events <-chan struct{}, what string, ok func(Stats) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for !ok(in.Stats()) {
		select {
		case <-events:
		case <-deadline:
			t.Fatalf("backend never reached %s: %+v", what, in.Stats())
		}
	}
}

// TestServerSchedule: a scheduled change of workers and latency takes
// effect, and Reset restores the base settings.
func TestServerSchedule(t *testing.T) {
	in, err := Listen("127.0.0.1:0", Params{Workers: 4, Service: Dist{Kind: Const, Mean: 10 * time.Millisecond},
		Changes: []Change{{At: 20 * time.Millisecond, Workers: 2, Slowdown: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	events := watch(in)
	defer in.Shutdown(context.Background())
	waitFor(t, in, events, "the change", func(s Stats) bool { return s.Workers == 2 })
	if s := in.Stats(); s.Slowdown != 4 || s.Capacity != 50 {
		t.Fatalf("after the change: %+v", s)
	}
	in.Reset()
	if s := in.Stats(); s.Workers != 4 || s.Slowdown != 1 || s.Capacity != 400 {
		t.Fatalf("after reset: %+v", s)
	}
}

// TestServerDropAbandoned: with DropAbandoned, a queued request whose
// client gives up leaves the queue; without, it stays (and is served).
func TestServerDropAbandoned(t *testing.T) {
	for _, drop := range []bool{true, false} {
		in := start(t, Params{Workers: 1, DropAbandoned: drop, Service: Dist{Kind: Const, Mean: outlasting}})
		events := watch(in)
		go get(in.URL + "/work") // holds the only worker
		waitFor(t, in, events, "a request in service", func(s Stats) bool { return s.InService == 1 })
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, in.URL+"/work", nil)
		done := make(chan error, 1)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		waitFor(t, in, events, "a queued request", func(s Stats) bool { return s.Queued == 1 })
		cancel()
		if err := <-done; err == nil {
			t.Fatal("cancelled request succeeded")
		}
		if drop {
			waitFor(t, in, events, "the abandoned request gone", func(s Stats) bool { return s.Abandoned == 1 && s.Queued == 0 })
		} else {
			waitFor(t, in, events, "the abandoned request served", func(s Stats) bool { return s.InService == 1 && s.Queued == 0 })
			if s := in.Stats(); s.Abandoned != 0 {
				t.Fatalf("abandoned %d without DropAbandoned", s.Abandoned)
			}
		}
	}
}

// TestServerCPUMode: in CPU mode a request uses its service time as CPU.
func TestServerCPUMode(t *testing.T) {
	in := start(t, Params{Workers: 1, CPU: true, Service: Dist{Kind: Const, Mean: 30 * time.Millisecond}})
	before := processCPU(t)
	if code, _, err := get(in.URL + "/work"); err != nil || code != 200 {
		t.Fatalf("CPU-mode request: %d %v", code, err)
	}
	if used := processCPU(t) - before; used < 30*time.Millisecond {
		t.Fatalf("a 30ms CPU-mode request used %v of CPU", used)
	}
}

func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// A request that finds the workers stalled is served once the stall ends:
// the stall's 300 ms, from the schedule's start, hold up a 1 ms request sent
// at once (how long exactly depends on the machine's load; it cannot be
// shorter), and the service end of a request is pushed past the stall as
// pause.Periodic.End says.
func TestServerStalls(t *testing.T) {
	st := pause.Periodic{For: 300 * time.Millisecond, Every: time.Hour, From: 0}
	in := start(t, Params{Workers: 1, Service: Dist{Kind: Const, Mean: time.Millisecond}, Stall: st})
	in.Server.Reset()
	t0 := time.Now()
	if code, _, err := get(in.URL + "/work"); err != nil || code != 200 {
		t.Fatalf("%d %v", code, err)
	}
	if took := time.Since(t0); took < 300*time.Millisecond {
		t.Errorf("a request sent into a 300 ms stall was served in %v", took)
	}
	s := in.Server
	base := time.Unix(0, s.startNs.Load())
	for _, tc := range []struct{ start, want time.Duration }{
		{10 * time.Millisecond, 301 * time.Millisecond},
		{400 * time.Millisecond, 401 * time.Millisecond},
	} {
		if got := s.serviceEnd(base.Add(tc.start), time.Millisecond).Sub(base); got != tc.want {
			t.Errorf("service from %v ends at %v, want %v", tc.start, got, tc.want)
		}
	}
}

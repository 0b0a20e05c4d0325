package backend

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
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

func TestServerQueueFull(t *testing.T) {
	in := start(t, Params{Workers: 1, Queue: 2, Service: Dist{Kind: Const, Mean: 300 * time.Millisecond}})
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
		Workers: 1, Service: Dist{Kind: Const, Mean: 200 * time.Millisecond},
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

package limits

import (
	"sync"
	"testing"
)

func TestAllowance(t *testing.T) {
	var a Allowance
	if left, ok, open := a.Take(1); ok || !open || left != 0 {
		t.Fatalf("zero value: Take(1) = %d %v %v, want open and empty", left, ok, open)
	}
	if got := a.Add(5); got != 5 {
		t.Fatalf("Add(5) = %d", got)
	}
	if left, ok, _ := a.Take(3); !ok || left != 2 {
		t.Fatalf("Take(3) = %d %v", left, ok)
	}
	if left, ok, _ := a.Take(3); ok || left != 2 {
		t.Fatalf("Take(3) of 2 = %d %v, want refused with 2 left", left, ok)
	}
	if left, ok, _ := a.Take(0); !ok || left != 2 {
		t.Fatalf("probe = %d %v", left, ok)
	}
	if got := a.Withdraw(5); got != 2 {
		t.Fatalf("Withdraw(5) of 2 = %d", got)
	}
	a.Add(4)
	if got := a.Close(); got != 4 {
		t.Fatalf("Close = %d, want the 4 held", got)
	}
	if _, ok, open := a.Take(0); ok || open {
		t.Fatalf("closed: Take(0) ok=%v open=%v", ok, open)
	}
	if got := a.Close(); got != 0 {
		t.Fatalf("second Close = %d", got)
	}
	if got := a.Withdraw(1); got != 0 {
		t.Fatalf("Withdraw on a closed allowance = %d", got)
	}
	if n, open := a.Held(); n != 0 || open {
		t.Fatalf("Held = %d %v", n, open)
	}
	if got := a.Add(3); got != 3 {
		t.Fatalf("Add on a closed allowance = %d, want it open with 3", got)
	}
}

// Concurrent takers never take more than was added, and every unit added is
// either taken or still held.
func TestAllowanceConcurrent(t *testing.T) {
	var a Allowance
	var wg sync.WaitGroup
	var mu sync.Mutex
	taken := int64(0)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := int64(0)
			for range 2000 {
				if _, ok, _ := a.Take(1); ok {
					n++
				}
			}
			mu.Lock()
			taken += n
			mu.Unlock()
		}()
	}
	for range 100 {
		a.Add(50)
	}
	wg.Wait()
	held, _ := a.Held()
	if taken+held != 5000 || taken > 5000 {
		t.Fatalf("taken %d + held %d, want 5000 added", taken, held)
	}
}

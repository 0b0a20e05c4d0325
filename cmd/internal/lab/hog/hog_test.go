package hog

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	if err := (Params{Threads: 2, Nice: 5}).Validate(); err != nil {
		t.Fatal(err)
	}
	err := (Params{Threads: 0, Nice: 20}).Validate()
	if err == nil || !strings.Contains(err.Error(), "threads must be in [1,1024], got 0") || !strings.Contains(err.Error(), "nice must be in [0,19], got 20") {
		t.Fatalf("Validate = %v", err)
	}
}

// Start returns once the loops run at the nice level asked for (read back
// from /proc for each of their threads), and Stop stops them after each did
// some work.
func TestStartAtNice(t *testing.T) {
	h, err := Start(Params{Threads: 2, Nice: 7})
	if err != nil {
		t.Fatal(err)
	}
	var nices []int
	for _, tid := range h.tids {
		nices = append(nices, nice(t, tid))
	}
	rounds := h.Stop()
	if len(nices) != 2 || nices[0] != 7 || nices[1] != 7 {
		t.Errorf("the loops' threads run at nice %v, want 7 each", nices)
	}
	if rounds < 2 {
		t.Errorf("%d rounds of work, want at least one a loop", rounds)
	}
}

// nice reads the nice level of thread tid of this process from /proc.
func nice(t *testing.T, tid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/stat")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	// The fields after the command's closing parenthesis: nice is the 19th
	// field of the line, the 17th after it.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	v, err := strconv.Atoi(f[16])
	if err != nil {
		t.Fatalf("stat of thread %d: %q", tid, s)
	}
	return v
}

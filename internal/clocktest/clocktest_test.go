package clocktest

import (
	"testing"
	"time"
)

func TestClockMovesOnlyByHand(t *testing.T) {
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	c := New(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now() = %v, want %v", got, start)
	}
	if got := c.Advance(1500 * time.Millisecond); !got.Equal(start.Add(1500 * time.Millisecond)) {
		t.Fatalf("Advance returned %v", got)
	}
	if got := c.Advance(-time.Second); !got.Equal(start.Add(500 * time.Millisecond)) {
		t.Fatalf("Advance(-1s) returned %v", got)
	}
	if got := c.Now(); !got.Equal(start.Add(500 * time.Millisecond)) {
		t.Fatalf("Now() after advancing = %v", got)
	}
	c.Set(start.Add(time.Hour))
	if got := c.Now(); !got.Equal(start.Add(time.Hour)) {
		t.Fatalf("Now() after Set = %v", got)
	}
}

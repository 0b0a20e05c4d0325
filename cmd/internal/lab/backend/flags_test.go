package backend

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/pause"
)

func TestFlagsRoundTrip(t *testing.T) {
	for _, p := range []Params{
		{},
		{
			Workers: 8, Service: Dist{Kind: Bimodal, Mean: 5 * time.Millisecond, Slow: 80 * time.Millisecond, SlowFraction: 0.05},
			Queue: 100, QueuedMemory: 1 << 20, MemoryLimit: 1 << 28, RestartDelay: 2 * time.Second,
			CPU: true, DropAbandoned: true, ResponseBytes: 1024,
			Changes: []Change{{At: 30 * time.Second, Slowdown: 2}, {At: time.Minute, Workers: 4}},
		},
		{Stall: pause.Periodic{For: 300 * time.Millisecond, Every: 3 * time.Second, From: time.Second}},
	} {
		fs := flag.NewFlagSet("backend", flag.ContinueOnError)
		build := RegisterFlags(fs)
		if err := fs.Parse(p.Args()); err != nil {
			t.Fatal(err)
		}
		got, err := build()
		if err != nil {
			t.Fatal(err)
		}
		if want := p.WithDefaults(); !reflect.DeepEqual(got, want) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
		}
	}
}

func TestFlagsReject(t *testing.T) {
	for _, args := range [][]string{
		{"-service=gauss:1ms"},
		{"-change=1s:fast=2"},
		{"-workers=-1"},
		{"-stall=for=1s,every=1s"},
		{"-cpu", "-stall=for=1s,every=3s"},
	} {
		fs := flag.NewFlagSet("backend", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		build := RegisterFlags(fs)
		err := fs.Parse(args)
		if err == nil {
			_, err = build()
		}
		if err == nil || !strings.Contains(err.Error(), "backend: ") {
			t.Errorf("%v: error %v", args, err)
		}
	}
}

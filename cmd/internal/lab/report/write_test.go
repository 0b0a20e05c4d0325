package report

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteScenario(t *testing.T) {
	dir := t.TempDir()
	r := synthetic()
	r.Scenario, r.Contender = "synthetic", "aimd"
	Compute(&r)
	skipped := Run{Scenario: "synthetic", Contender: "nginx", Skipped: "nginx is not installed"}
	if err := WriteScenario(dir, "A synthetic run.\nSecond line.", []Run{r, skipped}); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# synthetic", "> A synthetic run.", "> Second line.",
		"| aimd | 125 | 63 | 84.0% |", "| nginx | skipped: nginx is not installed |",
		"## By phase", "| aimd | high | 200 | 76 |", "![aimd over time](timeline-aimd.png)",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}
	for _, f := range []string{"aimd.json", "nginx.json", GoodputPlot, TimelinePlot("aimd")} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, TimelinePlot("nginx"))); err == nil {
		t.Error("a timeline for a skipped contender")
	}
}

func TestWritePNG(t *testing.T) {
	var buf bytes.Buffer
	red := Palette[1]
	p := Panel{Title: "t", Series: []Series{{Name: "s", X: []float64{0, 1, 2}, Y: []float64{0, 10, 5}, Color: red}}, HLines: []HLine{{Y: 8, Label: "SLO", Color: Palette[7]}}}
	if err := WritePNG(&buf, 400, 200, []Panel{p, p}); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 400 || b.Dy() != 400 {
		t.Fatalf("size %v", b)
	}
	n := 0
	for y := 0; y < 400; y++ {
		for x := 0; x < 400; x++ {
			if r, g, b, _ := img.At(x, y).RGBA(); r>>8 == uint32(red.R) && g>>8 == uint32(red.G) && b>>8 == uint32(red.B) {
				n++
			}
		}
	}
	if n < 200 {
		t.Errorf("only %d pixels of the series colour", n)
	}
	if err := WritePNG(&buf, 10, 10, []Panel{p}); err == nil {
		t.Error("a 10x10 plot was drawn")
	}
}

func TestTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   []float64
	}{
		{0, 10, []float64{0, 2, 4, 6, 8, 10}},
		{0, 1234, []float64{0, 200, 400, 600, 800, 1000, 1200}},
		{0, 0.33, []float64{0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35}},
	} {
		got := ticks(tc.lo, tc.hi)
		if len(got) != len(tc.want) {
			t.Errorf("ticks(%v, %v) = %v, want %v", tc.lo, tc.hi, got, tc.want)
			continue
		}
		for i := range got {
			if !near(got[i], tc.want[i], 1e-9) {
				t.Errorf("ticks(%v, %v) = %v, want %v", tc.lo, tc.hi, got, tc.want)
				break
			}
		}
	}
	if s := formatTick(0.15, []float64{0.1, 0.15}); s != "0.15" {
		t.Errorf("formatTick = %q", s)
	}
	if s := formatTick(20000, []float64{0, 10000, 20000}); s != "20k" {
		t.Errorf("formatTick = %q", s)
	}
}

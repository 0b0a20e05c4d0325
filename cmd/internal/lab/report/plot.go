package report

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"strconv"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Series is one line of a Panel. A NaN in Y breaks the line.
type Series struct {
	Name   string
	X, Y   []float64
	Color  color.RGBA
	Dashed bool
	Marks  bool // draw a dot at each point
}

// HLine is a horizontal reference line, such as the SLO.
type HLine struct {
	Y     float64
	Label string
	Color color.RGBA
}

// Panel is one chart with its own axes.
type Panel struct {
	Title  string // the y quantity and unit, e.g. "p99 latency (ms)"
	XLabel string
	Series []Series
	HLines []HLine
	// XMin and XMax fix the x range when XMax > XMin (panels stacked in
	// one figure share it); otherwise the data decide.
	XMin, XMax float64
}

// Palette gives series distinct colours, in order.
var Palette = []color.RGBA{
	{31, 119, 180, 255}, {214, 39, 40, 255}, {44, 160, 44, 255}, {255, 127, 14, 255},
	{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255},
}

var (
	white = color.RGBA{255, 255, 255, 255}
	black = color.RGBA{0, 0, 0, 255}
	grid  = color.RGBA{225, 225, 225, 255}
	face  = basicfont.Face7x13
)

// Margins of a panel's plot area, in pixels.
const (
	padLeft   = 64
	padRight  = 16
	padTop    = 22
	padBottom = 34
)

// WritePNG renders panels stacked top to bottom, each panelHeight pixels
// tall and width wide, as a PNG. It is a small line plotter: linear axes,
// "nice" ticks, a legend; enough for the lab's time series.
func WritePNG(w io.Writer, width, panelHeight int, panels []Panel) error {
	if width < 200 || panelHeight < 100 || len(panels) == 0 {
		return fmt.Errorf("report: plot of %dx%d with %d panels is too small", width, panelHeight, len(panels))
	}
	img := image.NewRGBA(image.Rect(0, 0, width, panelHeight*len(panels)))
	draw.Draw(img, img.Bounds(), image.NewUniform(white), image.Point{}, draw.Src)
	for i, p := range panels {
		drawPanel(img, image.Rect(0, i*panelHeight, width, (i+1)*panelHeight), p)
	}
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	return enc.Encode(w, img)
}

func drawPanel(img *image.RGBA, r image.Rectangle, p Panel) {
	area := image.Rect(r.Min.X+padLeft, r.Min.Y+padTop, r.Max.X-padRight, r.Max.Y-padBottom)
	xmin, xmax, ymin, ymax := bounds(p)
	if p.XMax > p.XMin {
		xmin, xmax = p.XMin, p.XMax
	}
	xt := ticks(xmin, xmax)
	yt := ticks(ymin, ymax)
	xmin, xmax = math.Min(xmin, xt[0]), math.Max(xmax, xt[len(xt)-1])
	ymin, ymax = math.Min(ymin, yt[0]), math.Max(ymax, yt[len(yt)-1])
	px := func(x float64) int { return area.Min.X + int(math.Round((x-xmin)/(xmax-xmin)*float64(area.Dx()))) }
	py := func(y float64) int { return area.Max.Y - int(math.Round((y-ymin)/(ymax-ymin)*float64(area.Dy()))) }

	for _, t := range yt {
		y := py(t)
		hline(img, area.Min.X, area.Max.X, y, grid)
		label := formatTick(t, yt)
		text(img, area.Min.X-6-textWidth(label), y+4, label, black)
	}
	for _, t := range xt {
		x := px(t)
		vline(img, x, area.Min.Y, area.Max.Y, grid)
		label := formatTick(t, xt)
		text(img, x-textWidth(label)/2, area.Max.Y+15, label, black)
	}
	hline(img, area.Min.X, area.Max.X, area.Max.Y, black)
	vline(img, area.Min.X, area.Min.Y, area.Max.Y, black)
	text(img, area.Min.X, r.Min.Y+15, p.Title, black)
	text(img, area.Max.X-textWidth(p.XLabel), area.Max.Y+30, p.XLabel, black)

	for _, h := range p.HLines {
		y := py(h.Y)
		for x := area.Min.X; x < area.Max.X; x++ {
			if (x/6)%2 == 0 {
				img.SetRGBA(x, y, h.Color)
			}
		}
		text(img, area.Min.X+4, y-3, h.Label, h.Color)
	}
	for _, s := range p.Series {
		prevOK := false
		var x0, y0 int
		for i := range s.X {
			if i >= len(s.Y) || math.IsNaN(s.Y[i]) || math.IsNaN(s.X[i]) {
				prevOK = false
				continue
			}
			if s.X[i] < xmin || s.X[i] > xmax {
				prevOK = false
				continue
			}
			x1, y1 := px(s.X[i]), py(s.Y[i])
			if prevOK {
				line(img, x0, y0, x1, y1, s.Color, s.Dashed, area)
			}
			if s.Marks {
				for dx := -2; dx <= 2; dx++ {
					for dy := -2; dy <= 2; dy++ {
						set(img, x1+dx, y1+dy, s.Color, area.Inset(-3))
					}
				}
			}
			x0, y0, prevOK = x1, y1, true
		}
	}
	// Legend, top right inside the plot area, on a white box so lines
	// passing under it do not hide it.
	wmax, n := 0, 0
	for _, s := range p.Series {
		if s.Name != "" {
			wmax, n = max(wmax, textWidth(s.Name)), n+1
		}
	}
	if n > 0 {
		box := image.Rect(area.Max.X-wmax-32, area.Min.Y+2, area.Max.X-2, area.Min.Y+6+15*n)
		draw.Draw(img, box, image.NewUniform(white), image.Point{}, draw.Src)
	}
	y := area.Min.Y + 14
	for _, s := range p.Series {
		if s.Name == "" {
			continue
		}
		x := area.Max.X - textWidth(s.Name) - 26
		for dx := 0; dx < 16; dx++ {
			for dy := -1; dy <= 1; dy++ {
				img.SetRGBA(x+dx, y-4+dy, s.Color)
			}
		}
		text(img, x+20, y, s.Name, black)
		y += 15
	}
}

// bounds is the data's extent; y always includes 0.
func bounds(p Panel) (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = math.Inf(1), math.Inf(-1), 0, math.Inf(-1)
	for _, s := range p.Series {
		for i := range s.X {
			if i >= len(s.Y) || math.IsNaN(s.X[i]) || math.IsNaN(s.Y[i]) || math.IsInf(s.Y[i], 0) {
				continue
			}
			xmin, xmax = math.Min(xmin, s.X[i]), math.Max(xmax, s.X[i])
			ymin, ymax = math.Min(ymin, s.Y[i]), math.Max(ymax, s.Y[i])
		}
	}
	for _, h := range p.HLines {
		ymax = math.Max(ymax, h.Y)
	}
	if math.IsInf(xmin, 0) {
		xmin, xmax = 0, 1
	}
	if math.IsInf(ymax, 0) || ymax <= ymin {
		ymax = ymin + 1
	}
	if xmax <= xmin {
		xmax = xmin + 1
	}
	return xmin, xmax, ymin, ymax * 1.05
}

// ticks returns about five round tick values covering [lo, hi] (Heckbert's
// "nice numbers", Graphics Gems, 1990).
func ticks(lo, hi float64) []float64 {
	step := nice((hi-lo)/5, true)
	start := math.Floor(lo/step) * step
	var out []float64
	for v := start; v <= hi+step*0.5 && len(out) < 50; v += step {
		out = append(out, math.Round(v/step)*step)
	}
	return out
}

func nice(x float64, round bool) float64 {
	if x <= 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return 1
	}
	exp := math.Floor(math.Log10(x))
	f := x / math.Pow(10, exp)
	var nf float64
	switch {
	case round && f < 1.5:
		nf = 1
	case round && f < 3:
		nf = 2
	case round && f < 7:
		nf = 5
	case round:
		nf = 10
	case f <= 1:
		nf = 1
	case f <= 2:
		nf = 2
	case f <= 5:
		nf = 5
	default:
		nf = 10
	}
	return nf * math.Pow(10, exp)
}

// formatTick prints t with as many decimals as the tick spacing needs.
func formatTick(t float64, all []float64) string {
	decimals := 0
	if len(all) > 1 {
		step := all[1] - all[0]
		if step < 1 {
			decimals = int(math.Ceil(-math.Log10(step)))
		}
	}
	if math.Abs(t) >= 10000 && decimals == 0 {
		return strconv.FormatFloat(t/1000, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(t, 'f', decimals, 64)
}

func textWidth(s string) int { return font.MeasureString(face, s).Round() }

func text(img *image.RGBA, x, y int, s string, c color.Color) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: face, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

func hline(img *image.RGBA, x0, x1, y int, c color.RGBA) {
	for x := x0; x <= x1; x++ {
		img.SetRGBA(x, y, c)
	}
}

func vline(img *image.RGBA, x, y0, y1 int, c color.RGBA) {
	for y := y0; y <= y1; y++ {
		img.SetRGBA(x, y, c)
	}
}

func set(img *image.RGBA, x, y int, c color.RGBA, clip image.Rectangle) {
	if (image.Point{x, y}).In(clip) {
		img.SetRGBA(x, y, c)
	}
}

// line draws a 2-pixel-wide segment (Bresenham), clipped to clip.
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA, dashed bool, clip image.Rectangle) {
	clip = clip.Inset(-1)
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for n := 0; ; n++ {
		if !dashed || (n/5)%2 == 0 {
			set(img, x0, y0, c, clip)
			set(img, x0, y0+1, c, clip)
		}
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func sign(x int) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

package report

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// chromium returns the path of a Chromium or Chrome binary: $IKET_CHROMIUM,
// else the first of the usual names on $PATH; "" when there is none.
func chromium() string {
	if p := os.Getenv("IKET_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// needChromium returns the browser, skipping the test when there is none,
// or failing it when IKET_REQUIRE_CHROMIUM=1 (CI), so CI cannot pass by
// skipping.
func needChromium(t *testing.T) string {
	t.Helper()
	bin := chromium()
	if bin != "" {
		return bin
	}
	const why = "no chromium binary on $PATH or in $IKET_CHROMIUM (Debian: apt-get install -y chromium)"
	if os.Getenv("IKET_REQUIRE_CHROMIUM") == "1" {
		t.Fatal(why + ", and IKET_REQUIRE_CHROMIUM=1")
	}
	t.Skip(why)
	return ""
}

// headless runs the browser on a file URL with extra arguments, a fresh
// profile in dir and no network, and returns its standard output.
func headless(bin, url, dir string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars", "--force-device-scale-factor=1",
		"--user-data-dir=" + dir}
	cmd := exec.CommandContext(ctx, bin, append(append(base, args...), "file://"+url)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("run %s %v on %s: %w\n%s", bin, args, url, err, stderr.Bytes())
	}
	return stdout.Bytes(), nil
}

// TestChromium renders a report in headless Chromium: the page's script must
// run without network access, mark the body as rendered, fill the summary,
// and draw the timeline (the first range colour appears in the screenshot).
// With -update the screenshot becomes docs/img/report.png.
func TestChromium(t *testing.T) {
	bin := needChromium(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	c := synthCapture(t, 4, 4, 64)
	page := render(t, synthInput(t, c, Limits{}))
	if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}

	shot := filepath.Join(dir, "report.png")
	if *update {
		shot = filepath.Join("..", "docs", "img", "report.png")
		if err := os.MkdirAll(filepath.Dir(shot), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Three independent browser runs, in parallel: the page with a hover
	// probe appended (see hoverProbe), the page with a URL fragment, and a
	// screenshot of the page.
	probe := filepath.Join(dir, "probe.html")
	if err := os.WriteFile(probe, []byte(page+hoverProbe), 0o644); err != nil {
		t.Fatal(err)
	}
	// A page with nothing to draw must still render.
	empty := filepath.Join(dir, "empty.html")
	if err := os.WriteFile(empty, []byte(render(t, &Input{Warps: []WarpView{{Slot: 1}}})), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := []struct {
		url  string
		args []string
		out  []byte
		err  error
	}{
		{url: probe, args: []string{"--dump-dom", "--window-size=1400,900"}},
		{url: file + "#sm=1-1&cta=1-2&t=1000-3000", args: []string{"--dump-dom"}},
		{url: file, args: []string{"--screenshot=" + shot, "--window-size=1400,900"}},
		{url: empty, args: []string{"--dump-dom"}},
	}
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() { runs[i].out, runs[i].err = headless(bin, runs[i].url, t.TempDir(), runs[i].args...) })
	}
	wg.Wait()
	for _, r := range runs {
		if r.err != nil {
			t.Fatal(r.err)
		}
	}

	dom := runs[0].out
	if !regexp.MustCompile(`<body[^>]* data-rendered="16 warps"`).Match(dom) {
		t.Errorf("dumped DOM lacks <body data-rendered=\"16 warps\">; the page's script did not run to the end:\n%.600s", dom)
	}
	want := "16 warps shown (192 ranges, 16 marks); span 7.766 µs"
	if !bytes.Contains(dom, []byte(want)) {
		m := regexp.MustCompile(`<span id="summary"[^>]*>[^<]*`).Find(dom)
		t.Errorf("summary = %q, want %q", m, want)
	}
	if n := strings.Count(string(dom), "<span><i"); n < 4+3 {
		t.Errorf("legend has %d entries, want the 4 range names and 3 symbols", n)
	}

	// A fragment selects SMs, CTAs and the time shown: SM 1 within CTAs 1-2
	// is CTA 1, 4 warps.
	frag := runs[1].out
	if !regexp.MustCompile(`<body[^>]* data-rendered="4 warps"`).Match(frag) {
		t.Errorf("with #sm=1-1&cta=1-2 the DOM lacks data-rendered=\"4 warps\":\n%.300s", regexp.MustCompile(`<body[^>]*>`).Find(frag))
	}
	if !regexp.MustCompile(`<body[^>]* data-view="1000\.\.3000"`).Match(frag) {
		t.Errorf("with #t=1000-3000 the DOM lacks data-view=\"1000..3000\": %s", regexp.MustCompile(`<body[^>]*>`).Find(frag))
	}
	want = "4 warps shown (48 ranges, 4 marks) of 16 embedded"
	if !bytes.Contains(frag, []byte(want)) {
		t.Errorf("filtered summary = %q, want %q", regexp.MustCompile(`<span id="summary"[^>]*>[^<]*`).Find(frag), want)
	}

	if e := runs[3].out; !regexp.MustCompile(`<body[^>]* data-rendered="1 warps"`).Match(e) {
		t.Errorf("the page without events did not render: %s", regexp.MustCompile(`<body[^>]*>`).Find(e))
	}

	// Hover: the probe moved the mouse over a load range, a start/end copy
	// range and a mark of the first producer, then over a role header.
	m := regexp.MustCompile(`data-hover="([^"]*)"`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("probe did not run: %s", regexp.MustCompile(`<body[^>]*>`).Find(dom))
	}
	tips := strings.Split(html.UnescapeString(string(m[1])), " || ")
	wantTips := [][]string{
		{"load", "push/pop range, depth 0", "payload0", "duration600 ns", "start100 ns", "SM0", "CTA(0, 0, 0)", "slot 0, warp 0", "roleproducer", "hidden=false"},
		{"copy", "start/end range, lane 0", "duration1.2 µs", "start300 ns", "hidden=false"},
		{"kernel_start (mark)", "time10 ns", "hidden=false"},
		{"hidden=true"},
	}
	if len(tips) != len(wantTips) {
		t.Fatalf("probe recorded %d tooltips, want %d: %q", len(tips), len(wantTips), tips)
	}
	for i, want := range wantTips {
		for _, w := range want {
			if !strings.Contains(tips[i], w) {
				t.Errorf("tooltip %d = %q, lacks %q", i, tips[i], w)
			}
		}
	}

	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("open screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decode screenshot %s: %v", shot, err)
	}
	if b := img.Bounds(); b.Dx() != 1400 || b.Dy() != 900 {
		t.Errorf("screenshot is %dx%d, want 1400x900", b.Dx(), b.Dy())
	}
	// The timeline's bars: the palette's first colours fill many pixels.
	for _, want := range []struct {
		name string
		c    color.RGBA
	}{{"load", color.RGBA{0x4e, 0x79, 0xa7, 0xff}}, {"compute", color.RGBA{0x59, 0xa1, 0x4f, 0xff}}} {
		if n := countColor(img, want.c); n < 500 {
			t.Errorf("screenshot has %d pixels of %s's colour %v, want the timeline's bars (>= 500)", n, want.name, want.c)
		}
	}
}

// hoverProbe hovers at (time ns, y px in the canvas) points: the first
// producer's row starts at y = 26 (axis) + 22 (role header); its push/pop
// sub-row is at +3..+16, its first async lane at +16..+29.
const hoverProbe = `<script>
(function () {
  var c = document.getElementById('timeline'), r = c.getBoundingClientRect();
  var v = document.body.getAttribute('data-view').split('..').map(Number);
  var pw = c.clientWidth - 190 - 10, tip = document.getElementById('tooltip');
  function at(t, y) {
    var x = r.left + 190 + (t - v[0]) / (v[1] - v[0]) * pw;
    c.dispatchEvent(new MouseEvent('mousemove', { clientX: x, clientY: r.top + y, bubbles: true }));
    return tip.textContent + ' hidden=' + tip.hidden;
  }
  var out = [at(450, 57), at(600, 70), at(10, 60), at(5000, 40)];
  document.body.setAttribute('data-hover', out.join(' || '));
})();
</script>`

func countColor(img image.Image, want color.RGBA) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if uint8(r>>8) == want.R && uint8(g>>8) == want.G && uint8(bl>>8) == want.B {
				n++
			}
		}
	}
	return n
}

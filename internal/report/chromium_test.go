package report

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReportOpensInHeadlessChromium opens a day-long report in a real browser:
// the page's script must run without an error and find every chart laid out
// with a size (it then sets data-ok on <body>), and a screenshot must come
// out. Static checks of the HTML cannot see a script error or an SVG that
// draws nothing.
//
// Chromium comes from hack/chromium.sh, which installs Debian's package when
// none is on PATH; the test fails when there is none to be had, since a
// skipped browser test looks like a passing one. NODEWRIGHT_SKIP_BROWSER=1
// skips it on purpose; NODEWRIGHT_CHROMIUM=path picks the binary.
// NODEWRIGHT_REPORT_OUT=dir keeps the page and its
// screenshot there for a person to look at.
func TestReportOpensInHeadlessChromium(t *testing.T) {
	if os.Getenv("NODEWRIGHT_SKIP_BROWSER") == "1" {
		t.Skip("NODEWRIGHT_SKIP_BROWSER=1")
	}
	bin := findChromium(t)

	dir := os.Getenv("NODEWRIGHT_REPORT_OUT")
	if dir == "" {
		dir = t.TempDir()
	}
	page := filepath.Join(dir, "report.html")
	var buf bytes.Buffer
	if err := WriteHTML(&buf, realisticRun(24*time.Hour, time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	url := "file://" + page

	// The page under test is the report plus a probe after its script that
	// hovers the first chart, so the tooltip code runs too.
	probed := filepath.Join(dir, "probed.html")
	html := strings.Replace(buf.String(), "</body>", hoverProbe+"</body>", 1)
	if err := os.WriteFile(probed, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, problems := pageProblems(t, bin, "file://"+probed)
	for _, problem := range problems {
		t.Error(problem)
	}
	if tip := attr(dom, "data-tooltip"); !strings.Contains(tip, "nodes") || !strings.Contains(tip, "at 11h") {
		t.Errorf("hovering the middle of a day-long chart showed tooltip %q, want the state at 11h..12h", tip)
	}

	// The checks above must see a broken page, or their silence means nothing.
	broken := filepath.Join(dir, "broken.html")
	html = strings.Replace(buf.String(), "<footer>", "<script>notDefined()</script><footer>", 1)
	if err := os.WriteFile(broken, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, problems := pageProblems(t, bin, "file://"+broken); len(problems) == 0 {
		t.Error("a page with a script error passed the checks")
	}

	shot := filepath.Join(dir, "report.png")
	runChromium(t, bin, "--screenshot="+shot, "--window-size=1280,1600", "--hide-scrollbars", url)
	png, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG")) || len(png) < 20_000 {
		t.Errorf("screenshot %s: %d bytes, not a rendered page", shot, len(png))
	}
	t.Logf("report %s, screenshot %s", page, shot)
}

// pageProblems opens url and returns its DOM and what went wrong: a script error, a
// console message, or the page's self-check not passing.
func pageProblems(t *testing.T, bin, url string) (dom string, problems []string) {
	t.Helper()
	dom, logs := runChromium(t, bin, "--dump-dom", url)
	if !strings.Contains(dom, `data-ok="1"`) {
		problems = append(problems, "the page's self-check did not pass (no data-ok on <body>); charts drawn: "+attr(dom, "data-charts"))
	}
	if e := attr(dom, "data-error"); e != "" {
		problems = append(problems, "script error on the page: "+e)
	}
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "CONSOLE") || strings.Contains(line, "Uncaught") {
			problems = append(problems, "browser console: "+line)
		}
	}
	return dom, problems
}

// hoverProbe moves the pointer to the middle of the first chart and copies
// the tooltip's text to <body data-tooltip>.
const hoverProbe = `<script>(function () {
  var svg = document.querySelector("svg.plot"), b = svg.getBoundingClientRect();
  svg.dispatchEvent(new MouseEvent("mousemove", {clientX: b.left + b.width / 2, clientY: b.top + b.height / 2}));
  var tip = document.getElementById("tooltip");
  document.body.setAttribute("data-tooltip", tip.hidden ? "" : tip.textContent);
})();</script>`

// findChromium asks hack/chromium.sh for a binary, installing one if it must,
// and logs which it is, since a rendering failure may be the browser's.
func findChromium(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join("..", "..", "hack", "chromium.sh"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("no Chromium, and hack/chromium.sh could not install one (set NODEWRIGHT_SKIP_BROWSER=1 to skip on purpose): %v\n%s", err, stderr.String())
	}
	bin := strings.TrimSpace(string(out))
	version, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", bin, err)
	}
	t.Logf("using %s: %s", bin, strings.TrimSpace(string(version)))
	return bin
}

// runChromium runs one headless command and returns its standard output and
// its log. Each run gets its own profile, so parallel test processes do not
// share one, and every host name fails to resolve, so a page that reached
// for the network would show it.
func runChromium(t *testing.T, bin string, args ...string) (stdout, log string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--no-default-browser-check", "--disable-extensions",
		"--disable-background-networking", "--host-resolver-rules=MAP * ~NOTFOUND",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0",
	}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, errs.String())
	}
	return out.String(), errs.String()
}

// attr returns the value of the first name="..." in html, or "".
func attr(html, name string) string {
	_, rest, ok := strings.Cut(html, name+`="`)
	if !ok {
		return ""
	}
	value, _, _ := strings.Cut(rest, `"`)
	return value
}

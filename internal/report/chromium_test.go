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
// skips it on purpose. NODEWRIGHT_REPORT_OUT=dir keeps the page and its
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

	dom, logs := runChromium(t, bin, "--dump-dom", url)
	if !strings.Contains(dom, `data-ok="1"`) {
		t.Errorf("the page's self-check did not pass (no data-ok on <body>); charts drawn: %q\nbrowser log:\n%s",
			attr(dom, "data-charts"), logs)
	}
	if e := attr(dom, "data-error"); e != "" {
		t.Errorf("script error on the page: %s", e)
	}
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "CONSOLE") || strings.Contains(line, "Uncaught") {
			t.Errorf("browser console: %s", line)
		}
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

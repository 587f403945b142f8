package report_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/internal/manifests"
	"github.com/nodewright/nodewright/internal/report"
	"github.com/nodewright/nodewright/internal/simulate"
)

// TestSimulatedReportOpensInHeadlessChromium: the report of a real run (the
// ci-runners example with drain by attrition) opens without an error and
// draws every chart, as `nodewright simulate --report` writes it.
func TestSimulatedReportOpensInHeadlessChromium(t *testing.T) {
	if os.Getenv("NODEWRIGHT_SKIP_BROWSER") == "1" {
		t.Skip("NODEWRIGHT_SKIP_BROWSER=1")
	}
	bin := report.FindChromium(t)
	base := filepath.Join("..", "..", "examples", "ci-runners")
	set, problems := manifests.Load(filepath.Join(base, "common"), filepath.Join(base, "attrition"))
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	tl, err := simulate.ReadTimeline(filepath.Join(base, "timeline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := simulate.New(set, simulate.Options{Timeline: tl})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	run := res.Report("nodewright simulate: examples/ci-runners")
	if len(run.Samples) < 2 || len(run.Events) == 0 {
		t.Fatalf("the run has %d samples and %d events; a report of it would show nothing", len(run.Samples), len(run.Events))
	}
	var buf bytes.Buffer
	if err := report.WriteHTML(&buf, run); err != nil {
		t.Fatal(err)
	}
	if cost := fmt.Sprintf("$%.2f", res.Cost); !strings.Contains(buf.String(), cost) {
		t.Errorf("the page does not show the run's cost %s, which its summary quotes", cost)
	}
	page := filepath.Join(t.TempDir(), "ci-runners.html")
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	_, pageErrs := report.PageProblems(t, bin, "file://"+page)
	for _, p := range pageErrs {
		t.Error(p)
	}
}

package report

// The browser checks, for the external test that opens a report of a real
// simulation (simulated_test.go), which cannot live in this package: the
// simulator imports it.
var (
	FindChromium = findChromium
	PageProblems = pageProblems
)

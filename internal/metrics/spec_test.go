package metrics

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestSpecsAreWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Specs() {
		if seen[s.Name] {
			t.Errorf("%s declared twice", s.Name)
		}
		seen[s.Name] = true
		switch {
		case strings.HasPrefix(s.Name, "nodewright_") && !s.Ours:
			t.Errorf("%s is nodewright's own name but not marked Ours", s.Name)
		case !strings.HasPrefix(s.Name, "karpenter_") && !strings.HasPrefix(s.Name, "nodewright_"):
			t.Errorf("%s: want a karpenter_ or nodewright_ name", s.Name)
		case s.Type == "" || s.Help == "":
			t.Errorf("%s lacks a type or help", s.Name)
		case s.Type == Counter && !strings.HasSuffix(s.Name, "_total"):
			t.Errorf("counter %s should end in _total", s.Name)
		}
	}
}

// TestOwnedMetricsMatchTheirSpec checks the metrics registered outside this
// package's constructors against the table.
func TestOwnedMetricsMatchTheirSpec(t *testing.T) {
	owned := map[string]prometheus.Collector{
		"karpenter_consolidation_score":       ConsolidationScore,
		"karpenter_consolidation_moves_total": ConsolidationMoves,
	}
	for _, s := range Specs() {
		if s.Owner == "" {
			continue
		}
		c, ok := owned[s.Name]
		if !ok {
			t.Errorf("%s is owned by %s but this test does not know its collector", s.Name, s.Owner)
			continue
		}
		ch := make(chan *prometheus.Desc, 1)
		c.Describe(ch)
		desc := (<-ch).String()
		if !strings.Contains(desc, fmt.Sprintf("fqName: %q", s.Name)) || !strings.Contains(desc, "variableLabels: {"+strings.Join(s.Labels, ",")+"}") {
			t.Errorf("%s: registered as %s, table says labels %v", s.Name, desc, s.Labels)
		}
	}
}

func TestSnake(t *testing.T) {
	for in, want := range map[string]string{
		"Underutilized":        "underutilized",
		"InsufficientCapacity": "insufficient_capacity",
		"GarbageCollected":     "garbage_collected",
		"ScaledDown":           "scaled_down",
		"Delete":               "delete",
		"drifted":              "drifted",
		"":                     "",
	} {
		if got := snake(in); got != want {
			t.Errorf("snake(%q) = %q, want %q", in, got, want)
		}
	}
}

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// TestGeneratedFilesAreFresh fails when the checked-in CRDs or deepcopy
// functions differ from what `make generate` would write.
func TestGeneratedFilesAreFresh(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found: %v", err)
	}
	cmd := exec.Command("go", "run", "./hack/crdgen", "-check")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

func TestCronRuleIsAnchoredRegexp(t *testing.T) {
	rule := cronRule["rule"].(string)
	if len(rule) < 100 || rule[:15] != "self.matches('^" {
		t.Fatalf("unexpected cron rule %q", rule)
	}
}

func TestKubeletPatterns(t *testing.T) {
	cases := []struct {
		pattern, value string
		want           bool
	}{
		{quantityPattern, "100Mi", true},
		{quantityPattern, "0.5", true},
		{quantityPattern, "1e3", true},
		{quantityPattern, "-1Gi", true}, // refused by a CEL rule instead, as in Karpenter
		{quantityPattern, "5%", false},
		{quantityPattern, "lots", false},
		{evictionThresholdPattern, "5%", true},
		{evictionThresholdPattern, "99.99%", true},
		{evictionThresholdPattern, "100%", true},
		{evictionThresholdPattern, "100Mi", true},
		{evictionThresholdPattern, "", true},
		{evictionThresholdPattern, "101%", false},
		{evictionThresholdPattern, "5.123%", false},
		{evictionThresholdPattern, "lots", false},
	}
	for _, tc := range cases {
		if got := regexp.MustCompile(tc.pattern).MatchString(tc.value); got != tc.want {
			t.Errorf("%s matches %q = %v, want %v", tc.pattern, tc.value, got, tc.want)
		}
	}
}

package main

import (
	"os"
	"os/exec"
	"path/filepath"
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

package plancheck_test

import (
	"encoding/binary"
	"os"
	"strconv"
	"testing"

	"github.com/nodewright/nodewright/internal/plancheck"
	"github.com/nodewright/nodewright/internal/solver"
)

// knownIncomplete are the seeds of TestSolveSeeds whose plans list a pod as
// unschedulable that kube-scheduler would bind, or a NodePool could launch a
// node for: known solver misses, kept visible here until fixed. A seed that
// turns complete fails the test, so that the list only shrinks.
var knownIncomplete = map[int]string{
	// The solver counts topology domains no node will occupy (a new
	// hostname, or a zone, of a NodePool that cannot launch for the pod:
	// no instance types, limits reached, a taint not tolerated), so a
	// spread's minimum is 0 where kube-scheduler's is higher. Smallest:
	// seed 17, one node and three pods with a hostname spread of maxSkew 2
	// and a NodePool with no instance types; the third pod is refused.
	17:  "phantom domains",
	96:  "phantom domains",
	166: "phantom domains",
	177: "phantom domains",
	// A new node's zone for a zone spread is chosen among the NodePool's
	// zones, not those of the instance types that fit the pod: one pod
	// (arch NotIn [arm64], zone spread, preferring zone 3) and a NodePool
	// whose only amd64 type is offered in zone 2 alone.
	60: "zone chosen outside the fitting types' offerings",
}

// TestSolveSeeds solves the random inputs FuzzSolve builds, from a fixed
// range of seeds, so that every run checks the same few hundred plans for
// validity and completeness without the fuzzer. A failure names its seed;
// FuzzSolve replays it from the 8 little-endian bytes of the seed.
// NODEWRIGHT_PLANCHECK_SEEDS widens the range.
func TestSolveSeeds(t *testing.T) {
	count := 200
	if v, err := strconv.Atoi(os.Getenv("NODEWRIGHT_PLANCHECK_SEEDS")); err == nil && v > 0 {
		count = v
	}
	t.Logf("seeds 1..%d", count)
	failed := 0
	for seed := 1; seed <= count && failed < 5; seed++ {
		in := decodeInput(binary.LittleEndian.AppendUint64(nil, uint64(seed)))
		plan, err := solver.Solve(in)
		if err != nil {
			t.Errorf("seed %d: Solve: %v", seed, err)
			failed++
			continue
		}
		var invalid, incomplete []plancheck.Violation
		for _, v := range plancheck.Check(in, plan) {
			if v.Constraint == "completeness" {
				incomplete = append(incomplete, v)
			} else {
				invalid = append(invalid, v)
			}
		}
		known, isKnown := knownIncomplete[seed]
		switch {
		case len(invalid) > 0 || len(incomplete) > 0 && !isKnown:
			t.Errorf("seed %d: %d violations:\n%s\nplan:\n%s\ninput:\n%s", seed, len(invalid)+len(incomplete),
				join(append(invalid, incomplete...)), describePlan(plan), describeInput(in))
			failed++
		case isKnown && len(incomplete) == 0:
			t.Errorf("seed %d: the plan is complete now; remove it from knownIncomplete (%s)", seed, known)
		case isKnown:
			t.Logf("seed %d: known solver miss (%s): %d pods; first: %s", seed, known, len(incomplete), incomplete[0])
		}
	}
}

package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
)

// The invariants every test that kills or cuts off the controller checks at
// its end: no NodeClaim launched twice for the same pods, nothing leaked.

// waitNoLeaks waits for every NodeClaim of pool to have a node and every
// node of pool a NodeClaim, and fails on each one that does not within
// timeout: leaked.
func waitNoLeaks(t *testing.T, pool string, timeout time.Duration) (claims, nodes, leaked int) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var problems []string
		cs, err := claimsOf(pool)
		if err != nil {
			t.Fatal(err)
		}
		ns, err := nodesOf(pool)
		if err != nil {
			t.Fatal(err)
		}
		byNode := map[string]bool{}
		for _, c := range cs {
			if c.Status.NodeName == "" || c.DeletionTimestamp != nil {
				problems = append(problems, fmt.Sprintf("NodeClaim %s has no node or is being deleted", c.Name))
			}
			byNode[c.Status.NodeName] = true
		}
		for _, n := range ns {
			if !byNode[n.Name] || n.Annotations[kwok.NodeClaimAnnotation] == "" {
				problems = append(problems, fmt.Sprintf("node %s has no NodeClaim: leaked", n.Name))
			}
		}
		if len(problems) == 0 || time.Now().After(deadline) {
			for _, p := range problems {
				t.Error(p)
			}
			return len(cs), len(ns), len(problems)
		}
		time.Sleep(time.Second)
	}
}

// checkNoDuplicates fails on every NodeClaim launched for pods of ns that
// another one still held, telling displacements apart as restart_test.go
// explains; it stops rec and returns the duplicates and displacements.
func checkNoDuplicates(t *testing.T, rec *claimRecorder, ns string) (duplicates, displaced int) {
	t.Helper()
	relaunches := rec.Relaunches(time.Minute)
	judge, err := newDisplacement(rec, ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, rl := range relaunches {
		if judge.displaced(rl) {
			displaced++
			continue
		}
		duplicates++
		t.Errorf("duplicate launch: %s", rl)
	}
	return duplicates, displaced
}

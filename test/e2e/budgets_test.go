package e2e

import (
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/disruption/budget"
	"github.com/nodewright/nodewright/internal/disruption/planner"
)

// TestRateBudget: nodewright.dev/disruption-rate "1/40s" spaces the
// deletions of empty nodes at least 40 s apart, though the nodes budget
// (100%) would let them all go at once.
func TestRateBudget(t *testing.T) {
	t.Parallel()
	const pool, ns = "rate", "e2e-rate"
	const window = 40 * time.Second
	nodeClass(t, pool, nil)
	nodePool(t, pool, pool, func(np *karpv1.NodePool) {
		consolidating(karpv1.ConsolidationPolicyWhenEmpty)(np)
		upTo8CPUs(np)
		np.Annotations = map[string]string{budget.DisruptionRateAnnotation: "1/" + window.String()}
	})
	namespace(t, ns)
	deployment(t, ns, "big", 3, map[string]string{karpv1.NodePoolLabelKey: pool}, podShape{cpu: "5", memory: "1Gi"})
	waitRunning(t, ns, 3, 4*time.Minute)
	first, err := claimsOf(pool)
	if err != nil || len(first) != 3 {
		t.Fatalf("want 3 claims, have %d (%v)", len(first), err)
	}
	scale(t, ns, "big", 0)
	// When each claim was deleted: its deletionTimestamp, or the first look
	// that found it gone.
	at := map[string]time.Time{}
	eventually(t, 4*time.Minute, "every empty node to go", func() (bool, error) {
		cs, err := claimsOf(pool)
		if err != nil {
			return false, err
		}
		for _, c := range first {
			if _, ok := at[c.Name]; ok {
				continue
			}
			switch i := indexOf(cs, c.Name); {
			case i < 0:
				at[c.Name] = time.Now()
			case cs[i].DeletionTimestamp != nil:
				at[c.Name] = cs[i].DeletionTimestamp.Time
			}
		}
		return len(at) == len(first), errorf("%d of %d deleted", len(at), len(first))
	})
	var deleted []time.Time
	for _, t := range at {
		deleted = append(deleted, t)
	}
	sort.Slice(deleted, func(i, j int) bool { return deleted[i].Before(deleted[j]) })
	t.Logf("deletions at %v", deleted)
	if len(deleted) != 3 {
		t.Fatalf("saw %d deletions, want 3", len(deleted))
	}
	for i := 1; i < len(deleted); i++ {
		// Timestamps have a second's resolution, and a claim found gone is
		// seen up to a poll late.
		if gap := deleted[i].Sub(deleted[i-1]); gap < window-2*time.Second {
			t.Errorf("deletions %d and %d came %s apart; the rate budget allows one per %s", i, i+1, gap, window)
		}
	}
}

// TestIndependentReasonBudgets: with nodewright.dev/independent-reason-budgets,
// a node being replaced for drift does not use up the Empty budget: an
// empty node goes while the drift replacement is still launching. The
// NodeClass delays registration so that the replacement takes a while.
func TestIndependentReasonBudgets(t *testing.T) {
	t.Parallel()
	const pool, ns = "independent", "e2e-independent"
	nodeClass(t, pool, &kwokv1alpha1.KWOKFaults{RegistrationDelay: &metav1.Duration{Duration: 60 * time.Second}})
	one := func(r karpv1.DisruptionReason) karpv1.Budget {
		return karpv1.Budget{Nodes: "1", Reasons: []karpv1.DisruptionReason{r}}
	}
	nodePool(t, pool, pool, func(np *karpv1.NodePool) {
		consolidating(karpv1.ConsolidationPolicyWhenEmpty)(np)
		upTo8CPUs(np)
		np.Annotations = map[string]string{budget.IndependentReasonBudgetsAnnotation: "true"}
		np.Spec.Disruption.Budgets = []karpv1.Budget{one(karpv1.DisruptionReasonDrifted), one(karpv1.DisruptionReasonEmpty)}
	})
	namespace(t, ns)
	rec := recordClaims(pool)
	sel := map[string]string{karpv1.NodePoolLabelKey: pool}
	deployment(t, ns, "keep", 1, sel, podShape{cpu: "5", memory: "1Gi"})
	waitRunning(t, ns, 1, 4*time.Minute)
	deployment(t, ns, "gone", 1, sel, podShape{cpu: "5", memory: "1Gi"})
	waitRunning(t, ns, 2, 4*time.Minute)
	var keepClaim, goneClaim string
	if cs, err := claimsOf(pool); err == nil {
		sort.Slice(cs, func(i, j int) bool { return cs[i].CreationTimestamp.Before(&cs[j].CreationTimestamp) })
		if len(cs) == 2 {
			keepClaim, goneClaim = cs[0].Name, cs[1].Name // the oldest drifts first
		}
	}
	if keepClaim == "" {
		t.Fatalf("want 2 claims: %s", describeClaims(pool))
	}
	patchPool(t, pool, func(np *karpv1.NodePool) { np.Spec.Template.Labels = map[string]string{"release": "two"} })
	eventually(t, 20*time.Second, "the oldest node to start its drift replacement", func() (bool, error) {
		s := rec.Last()
		return s[keepClaim].Annotations[planner.ReplacementsAnnotation] != "", errorf("%s has no replacement yet", keepClaim)
	})
	scale(t, ns, "gone", 0)
	// When the emptied node's claim went: its deletionTimestamp, or the
	// first look that found it gone (a claim may be deleted and gone
	// between two looks of the recorder).
	var emptyAt time.Time
	eventually(t, 3*time.Minute, "the emptied node to go", func() (bool, error) {
		cs, err := claimsOf(pool)
		if err != nil {
			return false, err
		}
		switch i := indexOf(cs, goneClaim); {
		case i < 0:
			emptyAt = time.Now()
		case cs[i].DeletionTimestamp != nil:
			emptyAt = cs[i].DeletionTimestamp.Time
		}
		return !emptyAt.IsZero(), errorf("%s still there", goneClaim)
	})
	eventually(t, 5*time.Minute, "the drift to finish", func() (bool, error) {
		nodes, err := nodesOf(pool)
		running, other, _ := podCounts(ns)
		return err == nil && len(nodes) == 1 && nodes[0].Labels["release"] == "two" && running == 1 && other == 0,
			errorf("%d nodes, %d pods running, %d not", len(nodes), running, other)
	})
	rec.Seen()
	s := rec.Last()
	if r := s.reason(goneClaim); r != "" && r != string(karpv1.DisruptionReasonEmpty) {
		t.Errorf("NodeClaim %s disrupted as %s, want Empty", goneClaim, r)
	}
	var replacedAt time.Time
	for _, r := range splitNames(s[keepClaim].Annotations[planner.ReplacementsAnnotation]) {
		if cond := meta.FindStatusCondition(s[r].Status.Conditions, karpv1.ConditionTypeInitialized); cond != nil {
			replacedAt = cond.LastTransitionTime.Time
		}
	}
	t.Logf("empty node deleted at %s; drift replacement initialized at %s", emptyAt, replacedAt)
	if replacedAt.IsZero() {
		t.Fatalf("did not see the drift replacement initialize: %s", describeClaims(pool))
	}
	// The Drifted budget of 1 was in use until the replacement was ready,
	// so only an Empty budget that counts on its own let the node go before.
	if !emptyAt.Before(replacedAt) {
		t.Errorf("the empty node went only after the drift replacement was ready; its budget was not independent")
	}
}

func splitNames(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func indexOf(cs []karpv1.NodeClaim, name string) int {
	for i, c := range cs {
		if c.Name == name {
			return i
		}
	}
	return -1
}

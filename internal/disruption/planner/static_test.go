package planner

import (
	"testing"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// staticPool is pool() with spec.replicas set.
func staticPool(name string, replicas int64) *karpv1.NodePool {
	return pool(name, func(np *karpv1.NodePool) { np.Spec.Replicas = &replicas })
}

// TestStaticNodePools: a static pool's nodes are never consolidated or
// drained by attrition, whatever its consolidation settings say; drift
// replaces a node by one replica of the pool's cheapest type, launched
// first; and other pools' pods may still move onto its nodes.
func TestStaticNodePools(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func() *world
		want  want
		check func(*testing.T, *Plan)
	}{{
		name: "an empty node of a static pool is kept",
		build: func() *world {
			w := newWorld(staticPool("s", 1))
			w.node("a", "s", "m5.4xlarge", "on-demand")
			return w
		},
		want: want{blockers: map[string]string{"a": "is static (spec.replicas)"}},
	}, {
		name: "an underused node of a static pool is not replaced by a cheaper one",
		build: func() *world {
			w := newWorld(staticPool("s", 1))
			w.node("a", "s", "m5.4xlarge", "on-demand")
			w.pod("a", "1", "1Gi", nil)
			return w
		},
		want: want{blockers: map[string]string{"a": "never consolidated"}},
	}, {
		name: "no drain by attrition on a static pool",
		build: func() *world {
			np := staticPool("s", 1)
			np.Annotations[DrainByAttritionAnnotation] = "true"
			w := newWorld(np)
			w.node("a", "s", "m5.4xlarge", "on-demand")
			w.pod("a", "1", "1Gi", doNotDisrupt("true"))
			return w
		},
		want: want{},
	}, {
		name: "a drifted static node is replaced by one replica, cheapest type, before it goes",
		build: func() *world {
			np := staticPool("s", 2)
			w := newWorld(np)
			w.node("a", "s", "m5.4xlarge", "on-demand")
			w.node("b", "s", "m5.4xlarge", "on-demand")
			w.pod("a", "1", "1Gi", nil)
			np.Spec.Template.Labels = map[string]string{"team": "new"}
			np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "1"}}
			return w
		},
		want: want{commands: []string{"Drifted/Replace:a"}, blockers: map[string]string{"b": "Drifted budget"}},
		check: func(t *testing.T, p *Plan) {
			rs := p.Commands[0].Replacements
			if len(rs) != 1 || rs[0].NodePool != "s" || len(rs[0].Pods) != 0 {
				t.Fatalf("replacements = %+v, want one empty replica of s", rs)
			}
			cheapest, price := "", 0.0
			for _, it := range catalog {
				if o, ok := it.Offerings.Cheapest(rs[0].Requirements); ok && (cheapest == "" || o.Price < price) {
					cheapest, price = it.Name, o.Price
				}
			}
			if got := rs[0].InstanceTypes[0].Name; got != cheapest {
				t.Errorf("replacement's first type = %s, want the pool's cheapest %s", got, cheapest)
			}
			if v := rs[0].Requirements.Get("team").Values(); len(v) != 1 || v[0] != "new" {
				t.Errorf("replacement's team label = %v, want the new template's", v)
			}
		},
	}, {
		name: "a dynamic pool's node is consolidated onto a static pool's node",
		build: func() *world {
			w := newWorld(staticPool("s", 1), pool("d"))
			w.node("a", "s", "m5.4xlarge", "on-demand")
			w.node("b", "d", "m5.4xlarge", "on-demand")
			w.pod("b", "1", "1Gi", nil)
			return w
		},
		want: want{commands: []string{"Underutilized/Delete:b"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.build().decide()
			check(t, p, tc.want)
			if tc.check != nil && !t.Failed() {
				tc.check(t, p)
			}
		})
	}
}

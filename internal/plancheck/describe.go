package plancheck

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// nodeSelectorString writes ORed terms as "(k In [a b], k2 Exists) OR (...)".
func nodeSelectorString(ns *corev1.NodeSelector) string {
	if ns == nil {
		return "<none>"
	}
	terms := make([]string, 0, len(ns.NodeSelectorTerms))
	for _, t := range ns.NodeSelectorTerms {
		var exprs []string
		for _, e := range t.MatchExpressions {
			exprs = append(exprs, fmt.Sprintf("%s %s %v", e.Key, e.Operator, e.Values))
		}
		for _, e := range t.MatchFields {
			exprs = append(exprs, fmt.Sprintf("field %s %s %v", e.Key, e.Operator, e.Values))
		}
		terms = append(terms, "("+strings.Join(exprs, ", ")+")")
	}
	return strings.Join(terms, " OR ")
}

// selectorKeys lists the label keys a node selector looks at.
func selectorKeys(ns *corev1.NodeSelector) []string {
	if ns == nil {
		return nil
	}
	var keys []string
	for _, t := range ns.NodeSelectorTerms {
		for _, e := range t.MatchExpressions {
			keys = append(keys, e.Key)
		}
	}
	return keys
}

// nodeLabelsFor writes the node's values for keys ("zone=a, arch absent"),
// which is what a person needs to see why a selector failed; all labels would
// drown it.
func nodeLabelsFor(n *node, keys []string) string {
	slices.Sort(keys)
	keys = slices.Compact(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		if v, ok := n.labels()[k]; ok {
			parts = append(parts, k+"="+v)
		} else {
			parts = append(parts, k+" absent")
		}
	}
	return strings.Join(parts, ", ")
}

func taintString(t corev1.Taint) string {
	if t.Value == "" {
		return fmt.Sprintf("%s:%s", t.Key, t.Effect)
	}
	return fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect)
}

package scale

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// nodeWaits says what the registered nodes that are not yet initialized
// wait for (NODEWRIGHT_SCALE_NODE_WAITS=1): how many are not Ready, and how
// many carry each taint, so that a run whose nodes are slow to become
// usable shows whose write they wait on (kwok's Ready, or
// kube-controller-manager lifting a not-ready taint).
func nodeWaits(ctx context.Context, cs kubernetes.Interface) (string, error) {
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: karpv1.NodeRegisteredLabelKey, ResourceVersion: "0"})
	if err != nil {
		return "", fmt.Errorf("listing registered nodes: %w", err)
	}
	return summarizeWaits(list.Items), nil
}

// summarizeWaits counts, of the nodes not labelled initialized, those not
// Ready and those with each taint.
func summarizeWaits(nodes []corev1.Node) string {
	waiting, notReady := 0, 0
	taints := map[string]int{}
	for _, n := range nodes {
		if n.Labels[karpv1.NodeInitializedLabelKey] == "true" {
			continue
		}
		waiting++
		ready := false
		for _, c := range n.Status.Conditions {
			ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
		}
		if !ready {
			notReady++
		}
		for _, t := range n.Spec.Taints {
			taints[t.Key+":"+string(t.Effect)]++
		}
	}
	keys := make([]string, 0, len(taints))
	for k := range taints {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := []string{fmt.Sprintf("%d registered, not initialized: %d not Ready", waiting, notReady)}
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", taints[k], k))
	}
	return strings.Join(parts, ", ")
}

package nodeclaim

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// patchNode writes what registration changed on a node: labels, taints and
// owner references.
//
// The taints are a list that a merge patch replaces whole, so the write must
// not land on taints someone else changed meanwhile (kube-controller-manager
// adds and lifts the not-ready taint). A resourceVersion precondition would
// ensure that, but it also refuses the write after any change at all, and a
// starting node's kubelet (kwok here) rewrites its status within seconds
// (in a 40,000-pod run the API server refused 716 of 3,030 node patches as
// conflicts, kube-controller-manager's taint writes among them), and each
// refusal costs the API server a request and the claim another reconcile. So the
// write is a JSON patch that tests the taints it replaces and touches only
// the labels and owner references it adds. When the write also labels the
// node initialized, it tests too that the node is still Ready (checkReady).
// Where the patch cannot be said that way (a node with no taints or
// labels), or the API server refuses it, it is the merge patch with the
// resourceVersion precondition. The server answers a failed test with 422
// Invalid and keeps the patch library's message to itself (the client sees
// only "the server rejected our request due to an error in our request"),
// so a failed test cannot be told from a value spelled differently: the
// second write lands in the latter case and is refused as a conflict, which
// the caller handles, when the node did change.
func patchNode(ctx context.Context, c client.Client, before, after *corev1.Node, check nodeCheck) error {
	if ops, ok := registrationOps(before, after, check); ok {
		data, err := json.Marshal(ops)
		if err != nil {
			return fmt.Errorf("encoding the registration patch: %w", err)
		}
		err = c.Patch(ctx, after, client.RawPatch(types.JSONPatchType, data))
		if err == nil || !apierrors.IsInvalid(err) {
			return err
		}
	}
	return c.Patch(ctx, after, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

// nodeCheck is what the registration write must find as it was read.
type nodeCheck int

const (
	checkTaints nodeCheck = iota // the taints it replaces
	checkReady                   // and the Ready condition
	checkAll                     // the whole node (its resourceVersion)
)

type jsonOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// registrationOps is the JSON patch from before to after, if the changes
// are only labels added or changed, taints replaced and owner references
// added, and check allows it; with checkReady, it also tests that before's
// Ready condition is still true.
func registrationOps(before, after *corev1.Node, check nodeCheck) ([]jsonOp, bool) {
	if check == checkAll || len(before.Spec.Taints) == 0 || len(before.Labels) == 0 {
		return nil, false
	}
	var ops []jsonOp
	if check == checkReady {
		i := slices.IndexFunc(before.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == corev1.NodeReady })
		if i < 0 || before.Status.Conditions[i].Status != corev1.ConditionTrue {
			return nil, false
		}
		ops = append(ops,
			jsonOp{Op: "test", Path: fmt.Sprintf("/status/conditions/%d/type", i), Value: corev1.NodeReady},
			jsonOp{Op: "test", Path: fmt.Sprintf("/status/conditions/%d/status", i), Value: corev1.ConditionTrue})
	}
	for k := range before.Labels {
		if _, ok := after.Labels[k]; !ok {
			return nil, false // a label removed
		}
	}
	if len(after.OwnerReferences) < len(before.OwnerReferences) {
		return nil, false
	}
	ops = append(ops,
		jsonOp{Op: "test", Path: "/spec/taints", Value: before.Spec.Taints},
		jsonOp{Op: "replace", Path: "/spec/taints", Value: nonNil(after.Spec.Taints)})
	for _, k := range slices.Sorted(maps.Keys(after.Labels)) {
		if v, ok := before.Labels[k]; !ok || v != after.Labels[k] {
			ops = append(ops, jsonOp{Op: "add", Path: "/metadata/labels/" + escapePointer(k), Value: after.Labels[k]})
		}
	}
	added := after.OwnerReferences[len(before.OwnerReferences):]
	switch {
	case len(added) == 0:
	case len(before.OwnerReferences) == 0:
		ops = append(ops, jsonOp{Op: "add", Path: "/metadata/ownerReferences", Value: added})
	default:
		for _, ref := range added {
			ops = append(ops, jsonOp{Op: "add", Path: "/metadata/ownerReferences/-", Value: ref})
		}
	}
	return ops, true
}

func nonNil(t []corev1.Taint) []corev1.Taint {
	if t == nil {
		return []corev1.Taint{}
	}
	return t
}

// escapePointer escapes a map key for a JSON pointer (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// patchClaimStatus writes after's status over before's. A resourceVersion
// precondition would refuse it after any change to the claim, and in a
// burst other writers change a starting claim all the time: the provisioner
// adds pods to its nominations (metadata), and the disruption loop stamps
// lastPodEventTime and writes its preview condition as soon as the claim
// initializes. In a 10,000-pod run the API server refused 940 of 2,095
// status patches as conflicts, each costing a request and a reconcile
// 200 ms later. So the write is a JSON patch that tests, by its index, each
// condition it replaces or removes is still what was read, appends the
// conditions it adds, and sets only the other fields this controller
// changed: a condition someone else wrote, a nomination or a pod timestamp
// does not fail it; a change to a condition it changes does, and so does a
// removal that moved it. The first write tests that no status is stored
// yet. A write that changes other fields, or one whose test fails (the API
// server answers 422), goes as before, with the resourceVersion
// precondition: a test that failed only because another writer spelled the
// same value differently then costs one request more, never a loop.
func patchClaimStatus(ctx context.Context, c client.Client, before, after *karpv1.NodeClaim) error {
	if ops, ok, err := claimStatusOps(before, after); err != nil {
		return err
	} else if ok {
		data, err := json.Marshal(ops)
		if err != nil {
			return fmt.Errorf("encoding the status patch: %w", err)
		}
		err = c.Status().Patch(ctx, after, client.RawPatch(types.JSONPatchType, data))
		if err == nil || !apierrors.IsInvalid(err) {
			return err
		}
		log.FromContext(ctx).V(1).Info("status patch refused; writing it with the resourceVersion precondition",
			"nodeclaim", after.Name, "resourceVersion", before.ResourceVersion, "patch", string(data), "error", err.Error())
	}
	return c.Status().Patch(ctx, after, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

// claimStatusOps is the JSON patch from before's status to after's, if
// before has conditions to test and after differs from it only in the
// conditions and the fields the lifecycle sets.
func claimStatusOps(before, after *karpv1.NodeClaim) ([]jsonOp, bool, error) {
	if len(after.Status.Conditions) == 0 {
		return nil, false, nil
	}
	if equality.Semantic.DeepEqual(before.Status, karpv1.NodeClaimStatus{}) {
		// The launch's first write. The API server drops a custom
		// resource's status on create, so a claim nobody has written status
		// to has none stored: testing that it is absent guards against a
		// writer we have not seen as well as a resourceVersion would,
		// without being refused for the nominations the provisioner adds
		// to the metadata meanwhile (about one conflict per claim in a
		// burst, each costing a second launch pass).
		return []jsonOp{
			{Op: "test", Path: "/status", Value: nil},
			{Op: "add", Path: "/status", Value: after.Status},
		}, true, nil
	}
	if len(before.Status.Conditions) == 0 {
		return nil, false, nil
	}
	rest := after.Status
	rest.Conditions, rest.NodeName, rest.ProviderID, rest.ImageID, rest.Capacity, rest.Allocatable =
		before.Status.Conditions, before.Status.NodeName, before.Status.ProviderID, before.Status.ImageID, before.Status.Capacity, before.Status.Allocatable
	if !equality.Semantic.DeepEqual(rest, before.Status) {
		return nil, false, nil
	}
	ops, err := conditionOps(before.Status.Conditions, after.Status.Conditions)
	if err != nil {
		return nil, false, err
	}
	for _, f := range []struct {
		name          string
		before, after any
		empty         bool
	}{
		{"nodeName", before.Status.NodeName, after.Status.NodeName, after.Status.NodeName == ""},
		{"providerID", before.Status.ProviderID, after.Status.ProviderID, after.Status.ProviderID == ""},
		{"imageID", before.Status.ImageID, after.Status.ImageID, after.Status.ImageID == ""},
		{"capacity", before.Status.Capacity, after.Status.Capacity, len(after.Status.Capacity) == 0},
		{"allocatable", before.Status.Allocatable, after.Status.Allocatable, len(after.Status.Allocatable) == 0},
	} {
		if equality.Semantic.DeepEqual(f.before, f.after) {
			continue
		}
		if f.empty {
			// Removing a member that may be absent fails the patch; the
			// merge patch says it plainly.
			return nil, false, nil
		}
		ops = append(ops, jsonOp{Op: "add", Path: "/status/" + f.name, Value: f.after})
	}
	if len(ops) == 0 {
		return nil, false, nil
	}
	return ops, true, nil
}

// conditionOps is the JSON patch from the conditions before to after, by
// type: each condition changed or removed is first tested at its index, as
// stored, then replaced or removed (the highest index first, so no removal
// moves another); each new one is appended. Conditions of other writers
// are neither tested nor written. The list is a map keyed by type in the
// CRD, so a condition of the same type appended meanwhile by someone else
// makes the API server refuse the patch rather than store it twice.
func conditionOps(before, after []metav1.Condition) ([]jsonOp, error) {
	at := make(map[string]int, len(before))
	for i, c := range before {
		at[c.Type] = i
	}
	kept := make(map[string]bool, len(after))
	var tests, writes, adds []jsonOp
	test := func(i int) error {
		was, err := storedForm(before[i])
		if err != nil {
			return err
		}
		tests = append(tests, jsonOp{Op: "test", Path: fmt.Sprintf("/status/conditions/%d", i), Value: was})
		return nil
	}
	for _, c := range after {
		kept[c.Type] = true
		i, ok := at[c.Type]
		switch {
		case !ok:
			adds = append(adds, jsonOp{Op: "add", Path: "/status/conditions/-", Value: c})
		case !equality.Semantic.DeepEqual(before[i], c):
			if err := test(i); err != nil {
				return nil, err
			}
			writes = append(writes, jsonOp{Op: "replace", Path: fmt.Sprintf("/status/conditions/%d", i), Value: c})
		}
	}
	for i := len(before) - 1; i >= 0; i-- {
		if !kept[before[i].Type] {
			if err := test(i); err != nil {
				return nil, err
			}
			writes = append(writes, jsonOp{Op: "remove", Path: fmt.Sprintf("/status/conditions/%d", i)})
		}
	}
	return append(append(tests, writes...), adds...), nil
}

// storedForm is v as the API server stores it in a custom resource: JSON
// with null fields pruned (a nil time such as lastPodEventTime encodes as
// null, which the server drops), so that a test operation compares like
// with like.
func storedForm(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding the status: %w", err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("decoding the status: %w", err)
	}
	return dropNulls(out), nil
}

func dropNulls(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
				continue
			}
			t[k] = dropNulls(e)
		}
	case []any:
		for i := range t {
			t[i] = dropNulls(t[i])
		}
	}
	return v
}

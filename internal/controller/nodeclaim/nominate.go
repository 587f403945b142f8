package nodeclaim

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/parallel"
	"github.com/nodewright/nodewright/internal/snapshot"
)

// PodUIDField indexes Pods by metadata.uid in the cache: nominations name
// pods by UID.
const PodUIDField = "metadata.uid"

// NominatedPodField indexes NodeClaims by the UIDs their nominations name.
const NominatedPodField = "nominatedPods"

// nominationCleared passes the pod updates in which kube-scheduler cleared
// status.nominatedNodeName of a pod it could not place (it does so after
// every failed try unless its NominatedNodeNameForExpectation feature is
// on): a pod tried before its planned node could take pods loses its
// nomination, and with it the room kept for it there.
var nominationCleared = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		was, okOld := e.ObjectOld.(*corev1.Pod)
		is, ok := e.ObjectNew.(*corev1.Pod)
		return okOld && ok && was.Status.NominatedNodeName != "" && is.Status.NominatedNodeName == "" && is.Spec.NodeName == ""
	},
}

// PodNodeNameField indexes Pods by spec.nodeName; the termination
// controller registers the same index under the same name.
const PodNodeNameField = "spec.nodeName"

// setupNominationIndexes registers PodUIDField, NominatedPodField and
// PodNodeNameField.
func setupNominationIndexes(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &karpv1.NodeClaim{}, NominatedPodField, func(o client.Object) []string {
		uids := snapshot.Nominations(o.GetAnnotations()[snapshot.NominatedPodsAnnotation])
		out := make([]string, len(uids))
		for i, u := range uids {
			out[i] = string(u)
		}
		return out
	}); err != nil {
		return fmt.Errorf("indexing NodeClaims by nominated pod: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, PodUIDField, func(o client.Object) []string {
		return []string{string(o.GetUID())}
	}); err != nil {
		return fmt.Errorf("indexing pods by uid: %w", err)
	}
	err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, PodNodeNameField, func(o client.Object) []string {
		if n := o.(*corev1.Pod).Spec.NodeName; n != "" {
			return []string{n}
		}
		return nil
	})
	// The termination controller's index of the same name means the same.
	if err != nil && !strings.Contains(err.Error(), "indexer conflict") {
		return fmt.Errorf("indexing pods by node: %w", err)
	}
	return nil
}

// claimsOfPod finds the NodeClaims that nominate a pod.
func (c *Controller) claimsOfPod(ctx context.Context, o client.Object) []reconcile.Request {
	return c.claimsWith(ctx, NominatedPodField, string(o.GetUID()))
}

// nominateWorkers bounds the pod writes one claim makes at a time.
const nominateWorkers = 8

// nominate writes the node's name into status.nominatedNodeName of each pod
// the claim's nominations name that is still waiting, while those
// nominations hold (snapshot.NominationsHold): of every such pod if
// WriteNominatedNodeName is on, else, if NominateDisplaced is, of those the
// claim's DisplacedPodsAnnotation lists. kube-scheduler then tries that node
// first for the pod, and keeps the pod's room there against pods of the
// same or lower priority. Without it the scheduler spreads a burst over the
// new nodes by its own scoring: a small pod takes the room planned for a
// large one, and the large one needs a node of its own.
//
// It runs before the node loses its unregistered taint, so the scheduler
// sees the nominations before it can place anything there. It is a hint:
// failures are logged, never returned, and the scheduler falls back to its
// own search when the pod does not fit.
//
// With ReleaseDisplaced, once the node is initialized only the pods the
// bound ones leave room for are written: the provisioner plans the others
// again elsewhere, and pointing them back here would undo that.
func (c *Controller) nominate(ctx context.Context, nc *karpv1.NodeClaim, node *corev1.Node) {
	uids := nominees(nc, c.Opts.WriteNominatedNodeName, c.Opts.NominateDisplaced)
	if len(uids) == 0 || !snapshot.NominationsHold(nc, c.Now(), c.Opts.NominationGrace) {
		return
	}
	var waiting []*corev1.Pod
	for _, uid := range uids {
		pod, err := c.podByUID(ctx, uid)
		if err != nil {
			log.FromContext(ctx).Error(err, "finding a nominated pod", "uid", uid)
			continue
		}
		if pod == nil || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
			continue
		}
		waiting = append(waiting, pod)
	}
	if c.Opts.ReleaseDisplaced && isTrue(nc, karpv1.ConditionTypeInitialized) && len(waiting) > 0 {
		bound, err := c.boundTo(ctx, node.Name)
		if err != nil {
			log.FromContext(ctx).Error(err, "listing the pods bound to a node", "node", node.Name)
			return
		}
		waiting, _ = snapshot.RoomFor(node.Status.Allocatable, bound, waiting)
	}
	var todo []*corev1.Pod
	for _, pod := range waiting {
		if pod.Status.NominatedNodeName != node.Name {
			todo = append(todo, pod)
		}
	}
	if len(todo) == 0 {
		return
	}
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"status":{"nominatedNodeName":%q}}`, node.Name))
	parallel.Do(len(todo), nominateWorkers, func(i int) {
		if err := c.Client.Status().Patch(ctx, todo[i], patch); err != nil && !apierrors.IsNotFound(err) {
			log.FromContext(ctx).Error(err, "writing nominatedNodeName", "pod", client.ObjectKeyFromObject(todo[i]), "node", node.Name)
		}
	})
}

// nominees are the nominated pods whose nominatedNodeName nominate writes:
// all of them, only those also listed as displaced, or none.
func nominees(nc *karpv1.NodeClaim, all, displaced bool) []types.UID {
	if !all && !displaced {
		return nil // the default: nothing to decode on every reconcile
	}
	uids := snapshot.Nominations(nc.Annotations[snapshot.NominatedPodsAnnotation])
	if all {
		return uids
	}
	marked := map[types.UID]bool{}
	for _, uid := range snapshot.Nominations(nc.Annotations[snapshot.DisplacedPodsAnnotation]) {
		marked[uid] = true
	}
	out := uids[:0]
	for _, uid := range uids {
		if marked[uid] {
			out = append(out, uid)
		}
	}
	return out
}

// boundTo lists the pods bound to a node that still hold room there.
func (c *Controller) boundTo(ctx context.Context, nodeName string) ([]*corev1.Pod, error) {
	var pods corev1.PodList
	if err := c.Client.List(ctx, &pods, client.MatchingFields{PodNodeNameField: nodeName}); err != nil {
		return nil, fmt.Errorf("listing pods on %s: %w", nodeName, err)
	}
	var out []*corev1.Pod
	for i := range pods.Items {
		if snapshot.Bound(&pods.Items[i]) {
			out = append(out, &pods.Items[i])
		}
	}
	return out, nil
}

func (c *Controller) podByUID(ctx context.Context, uid types.UID) (*corev1.Pod, error) {
	var pods corev1.PodList
	if err := c.Client.List(ctx, &pods, client.MatchingFields{PodUIDField: string(uid)}); err != nil {
		return nil, fmt.Errorf("listing pods by uid: %w", err)
	}
	if len(pods.Items) == 0 {
		return nil, nil
	}
	return &pods.Items[0], nil
}

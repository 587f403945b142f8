package nodeclaim

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/controller/nodepool"
	"github.com/nodewright/nodewright/internal/learned"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/snapshot"
)

// register links the claim to its node once one appears: the node takes the
// claim's labels, taints and startup taints, loses the unregistered taint,
// and is owned by the claim. Taints the node came with that the NodePool did
// not declare are recorded, to be waited out like startup taints.
func (c *Controller) register(ctx context.Context, nc *karpv1.NodeClaim, node *corev1.Node) (reconcile.Result, error) {
	if node == nil {
		launched := since(nc, karpv1.ConditionTypeLaunched)
		waited := c.Now().Sub(launched)
		if c.Opts.RegistrationTimeout > 0 && waited > c.Opts.RegistrationTimeout {
			msg := fmt.Sprintf("no node with providerID %s registered within %s", nc.Status.ProviderID, c.Opts.RegistrationTimeout)
			c.recordRegistration(ctx, nc, nodepool.Outcome{Reason: nodepool.ReasonRegistrationFailed, Message: "NodeClaim " + nc.Name + ": " + msg})
			return c.fail(ctx, nc, "RegistrationTimeout", "%s", msg)
		}
		return reconcile.Result{RequeueAfter: c.Opts.RegistrationTimeout - waited + time.Second}, nil
	}

	undeclared := undeclaredTaints(nc, node)
	if len(undeclared) > 0 && nc.Annotations[snapshot.RegistrationTaintsAnnotation] == "" {
		before := nc.DeepCopy()
		patched := nc.DeepCopy()
		if patched.Annotations == nil {
			patched.Annotations = map[string]string{}
		}
		patched.Annotations[snapshot.RegistrationTaintsAnnotation] = snapshot.EncodeTaints(undeclared)
		if err := c.Client.Patch(ctx, patched, client.MergeFrom(before)); err != nil {
			return reconcile.Result{}, fmt.Errorf("recording registration taints: %w", err)
		}
		c.writes.wrote(nc.Name, before.ResourceVersion, c.Now())
		nc = patched
	}

	// Before the unregistered taint goes: from then on kube-scheduler may
	// place pods on the node.
	c.nominate(ctx, nc, node)

	nodeBefore := node.DeepCopy()
	n := node.DeepCopy()
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	for k, v := range snapshot.ClaimLabels(nc) {
		if k == corev1.LabelHostname {
			continue
		}
		n.Labels[k] = v
	}
	n.Labels[karpv1.NodeRegisteredLabelKey] = "true"
	var taints []corev1.Taint
	for _, t := range n.Spec.Taints {
		if t.Key == karpv1.UnregisteredTaintKey {
			continue
		}
		taints = append(taints, t)
	}
	for _, t := range append(append([]corev1.Taint(nil), nc.Spec.Taints...), nc.Spec.StartupTaints...) {
		if !hasTaint(taints, t) {
			taints = append(taints, t)
		}
	}
	n.Spec.Taints = taints
	lifted := liftNotReady(n)
	owned := false
	for _, ref := range n.OwnerReferences {
		if ref.UID == nc.UID {
			owned = true
		}
	}
	if !owned {
		n.OwnerReferences = append(n.OwnerReferences, metav1.OwnerReference{
			APIVersion: karpv1.SchemeGroupVersion.String(), Kind: "NodeClaim", Name: nc.Name, UID: nc.UID,
		})
	}
	// A node that is already usable once this patch lands (a busy
	// controller often reaches it after its kubelet reported Ready) is
	// registered and initialized in the same two writes, not four.
	usable := len(notInitialized(nc, n)) == 0
	if usable {
		n.Labels[karpv1.NodeInitializedLabelKey] = "true"
	}
	// A node labelled initialized, or whose not-ready taint the write
	// lifts, must still be Ready when the write lands; one that must still
	// have an extended resource is checked whole.
	check := checkTaints
	switch {
	case usable && len(extendedRequests(nc)) > 0:
		check = checkAll
	case usable || lifted:
		check = checkReady
	}
	if err := patchNode(ctx, c.Client, nodeBefore, n, check); err != nil {
		return reconcile.Result{}, fmt.Errorf("syncing node %s at registration: %w", node.Name, err)
	}

	before := nc.DeepCopy()
	nc.Status.NodeName = n.Name
	setCondition(nc, karpv1.ConditionTypeRegistered, metav1.ConditionTrue, "Registered", "")
	var recheck time.Duration
	if usable {
		setCondition(nc, karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "")
		recheck = c.settle(ctx, nc, n)
	} else {
		setCondition(nc, karpv1.ConditionTypeInitialized, metav1.ConditionUnknown, "Initializing", "node registered; waiting for it to be Ready")
	}
	c.recordRegistration(ctx, nc, nodepool.Outcome{Registered: true})
	if err := c.patchStatus(ctx, before, nc); err != nil {
		return reconcile.Result{}, err
	}
	metrics.NodeClaimsRegistered.WithLabelValues(nc.Labels[karpv1.NodePoolLabelKey]).Inc()
	metrics.NodeCreated(nc)
	c.Recorder.Eventf(nc, corev1.EventTypeNormal, "Registered", "Node %s registered", n.Name)
	c.learn(ctx, nc, n)
	if usable {
		c.initialized(nc, n)
		return reconcile.Result{RequeueAfter: recheck}, nil
	}
	return c.initialize(ctx, nc, n)
}

// undeclaredTaints are the node's taints at registration that neither the
// claim nor Kubernetes accounts for.
func undeclaredTaints(nc *karpv1.NodeClaim, node *corev1.Node) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range node.Spec.Taints {
		if t.Key == karpv1.UnregisteredTaintKey || hasTaint(nc.Spec.Taints, t) || hasTaint(nc.Spec.StartupTaints, t) || hasTaint(ephemeralTaints, t) {
			continue
		}
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		out = append(out, t)
	}
	return out
}

// learn remembers a node's capacity when it differs from the model of its
// instance type. Failing to learn is logged, never fatal.
func (c *Controller) learn(ctx context.Context, nc *karpv1.NodeClaim, node *corev1.Node) {
	if c.Learned == nil {
		return
	}
	name := nc.Labels[corev1.LabelInstanceTypeStable]
	np := &karpv1.NodePool{}
	if name == "" || c.Client.Get(ctx, client.ObjectKey{Name: nc.Labels[karpv1.NodePoolLabelKey]}, np) != nil {
		return
	}
	its, err := c.Cloud.InstanceTypes(ctx, np)
	if err != nil {
		return
	}
	for _, it := range its {
		if it.Name != name {
			continue
		}
		diff := learned.Differences(it, node.Status.Capacity)
		if len(diff) == 0 {
			return
		}
		if err := c.Learned.Record(ctx, name, node.Name, diff, c.Now()); err != nil {
			log.FromContext(ctx).Error(err, "remembering learned capacity", "instanceType", name)
			return
		}
		c.Recorder.Eventf(nc, corev1.EventTypeNormal, "LearnedCapacity", "Node %s of type %s has capacity %v, which differs from the model; planning with it from now on",
			node.Name, name, diff)
		return
	}
}

package nodeclaim

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/snapshot"
)

// waitMessageAfter is how long after registration the Initialized
// condition's message starts to say what the node still waits for.
const waitMessageAfter = 15 * time.Second

// initialize marks the claim Initialized once its node is usable. Until then
// the claim is in flight, however long the node stays NotReady, up to
// InitializationTimeout.
func (c *Controller) initialize(ctx context.Context, nc *karpv1.NodeClaim, node *corev1.Node) (reconcile.Result, error) {
	// A Ready node that kube-controller-manager has not yet lifted the
	// not-ready taint from is usable once this write lifts it.
	usable := node.DeepCopy()
	lifted := liftNotReady(usable)
	waiting := notInitialized(nc, usable)
	if len(waiting) > 0 {
		waiting = notInitialized(nc, node)
		msg := strings.Join(waiting, "; ")
		registered := since(nc, karpv1.ConditionTypeRegistered)
		if c.Opts.InitializationTimeout > 0 && !registered.IsZero() && c.Now().Sub(registered) > c.Opts.InitializationTimeout {
			return c.fail(ctx, nc, "InitializationTimeout", "node %s did not initialize within %s: %s", node.Name, c.Opts.InitializationTimeout, msg)
		}
		// A node normally passes through NotReady and the not-ready taint
		// within seconds of registering. Writing each step into the message
		// would cost a burst of thousands of nodes two more writes each, when
		// the API server is busiest, and tell no one anything; so the message
		// registration wrote stands until the wait has lasted waitMessageAfter.
		if waited := c.Now().Sub(registered); !registered.IsZero() && waited < waitMessageAfter {
			return reconcile.Result{RequeueAfter: waitMessageAfter - waited}, nil
		}
		before := nc.DeepCopy()
		if setCondition(nc, karpv1.ConditionTypeInitialized, metav1.ConditionUnknown, "Initializing", msg) {
			if err := c.patchStatus(ctx, before, nc); err != nil {
				return reconcile.Result{}, err
			}
		}
		// Node events wake us; the requeue only bounds the timeout check.
		return reconcile.Result{RequeueAfter: 30 * time.Second}, nil
	}
	if node.Labels[karpv1.NodeInitializedLabelKey] != "true" || lifted {
		if usable.Labels == nil {
			usable.Labels = map[string]string{}
		}
		usable.Labels[karpv1.NodeInitializedLabelKey] = "true"
		// As at registration: still Ready when the write lands, and whole
		// when an extended resource must still be there.
		check := checkReady
		if len(extendedRequests(nc)) > 0 {
			check = checkAll
		}
		if err := patchNode(ctx, c.Client, node, usable, check); err != nil {
			return reconcile.Result{}, fmt.Errorf("labelling node %s initialized: %w", node.Name, err)
		}
		node = usable
	}
	before := nc.DeepCopy()
	setCondition(nc, karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "")
	recheck := c.settle(ctx, nc, node)
	if err := c.patchStatus(ctx, before, nc); err != nil {
		return reconcile.Result{}, err
	}
	c.initialized(nc, node)
	return reconcile.Result{RequeueAfter: recheck}, nil
}

// initialized counts and announces a claim whose Initialized condition was
// just written true.
func (c *Controller) initialized(nc *karpv1.NodeClaim, node *corev1.Node) {
	metrics.NodeClaimsInitialized.WithLabelValues(nc.Labels[karpv1.NodePoolLabelKey]).Inc()
	c.Recorder.Eventf(nc, corev1.EventTypeNormal, "Initialized", "Node %s initialized", node.Name)
}

// notInitialized lists what keeps a node from counting as initialized.
func notInitialized(nc *karpv1.NodeClaim, node *corev1.Node) []string {
	var out []string
	if ok, why := nodeReady(node); !ok {
		out = append(out, why)
	}
	startup := append(append([]corev1.Taint(nil), nc.Spec.StartupTaints...), snapshot.DecodeTaints(nc.Annotations[snapshot.RegistrationTaintsAnnotation])...)
	for _, t := range node.Spec.Taints {
		switch {
		case t.Key == karpv1.UnregisteredTaintKey:
			out = append(out, "unregistered taint still present")
		case hasTaint(startup, t):
			out = append(out, "startup taint "+t.Key+":"+string(t.Effect)+" still present")
		case hasTaint(ephemeralTaints, t):
			out = append(out, "taint "+t.Key+":"+string(t.Effect)+" still present")
		}
	}
	for _, name := range extendedRequests(nc) {
		if have, ok := node.Status.Allocatable[name]; !ok || have.IsZero() {
			out = append(out, "extended resource "+string(name)+" not yet registered")
		}
	}
	return out
}

// extendedRequests are the resources other than cpu, memory, pods and
// ephemeral storage that the claim requests: its node must list them before
// it counts as initialized.
func extendedRequests(nc *karpv1.NodeClaim) []corev1.ResourceName {
	var out []corev1.ResourceName
	for name, q := range nc.Spec.Resources.Requests {
		if !isWellKnown(name) && !q.IsZero() {
			out = append(out, name)
		}
	}
	return out
}

func isWellKnown(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage:
		return true
	}
	return false
}

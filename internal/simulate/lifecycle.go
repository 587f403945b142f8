package simulate

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
	"github.com/nodewright/nodewright/internal/controller/provisioning"
	"github.com/nodewright/nodewright/internal/disruption/drift"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/snapshot"
	"github.com/nodewright/nodewright/internal/solver"
)

func setCondition(nc *karpv1.NodeClaim, condType string, now time.Time) {
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: condType, Status: metav1.ConditionTrue,
		Reason: condType, LastTransitionTime: metav1.NewTime(now)})
}

// adoptClaims takes the input's NodeClaims with their nodes as running,
// initialized machines. A claim without a node in the input is left out:
// it would be launched again by the provisioner anyway.
func (e *Engine) adoptClaims(claims []*karpv1.NodeClaim) error {
	nodes := snapshot.IndexNodes(e.nodes)
	for _, in := range claims {
		nc := in.DeepCopy()
		node := nodes.ClaimNode(nc)
		if node == nil {
			e.rec.warn(fmt.Sprintf("NodeClaim %s has no node in the input; it is left out and its pods are planned again", nc.Name))
			continue
		}
		np := e.pool(nc.Labels[karpv1.NodePoolLabelKey])
		for _, c := range []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized} {
			if !meta.IsStatusConditionTrue(nc.Status.Conditions, c) {
				setCondition(nc, c, e.now)
			}
		}
		if nc.CreationTimestamp.IsZero() {
			nc.CreationTimestamp = metav1.NewTime(e.now)
		}
		nc.Status.NodeName = node.Name
		if nc.Status.ProviderID == "" {
			nc.Status.ProviderID = node.Spec.ProviderID
		}
		if len(nc.Status.Allocatable) == 0 {
			nc.Status.Allocatable = node.Status.Allocatable
		}
		if class := e.cloud.kwokClass(nc.Spec.NodeClassRef); nc.Status.ImageID == "" && class != nil {
			nc.Status.ImageID = class.Spec.Image
		}
		if np != nil && drift.NeedsRestamp(nc) {
			drift.Stamp(nc, np) // as the controller does for claims it did not stamp
		}
		st := &claimState{launched: nc.CreationTimestamp.Time, registerAt: e.now, initAt: e.now}
		if it := e.cloud.instanceType(np, node.Labels[corev1.LabelInstanceTypeStable]); it != nil {
			st.offering = offering{it: it, zone: node.Labels[corev1.LabelTopologyZone], capacityType: node.Labels[karpv1.CapacityTypeLabelKey]}
			for _, o := range it.Offerings {
				if o.Zone == st.offering.zone && o.CapacityType == st.offering.capacityType {
					st.offering.price = o.Price
				}
			}
		}
		e.claimState[nc.Name] = st
		e.insertClaim(nc)
	}
	return nil
}

// claimOfNode is the live claim whose node n is.
func (e *Engine) claimOfNode(n *corev1.Node) *karpv1.NodeClaim {
	if nc := e.claim(n.Name); nc != nil && nc.Status.NodeName == n.Name {
		return nc
	}
	for _, nc := range e.claims {
		if nc.Status.NodeName == n.Name {
			return nc
		}
	}
	return nil
}

// launch creates and launches the NodeClaim for a planned claim, as the
// provisioner and the kwok provider would. It returns nil when nothing
// could be launched.
func (e *Engine) launch(c *solver.NewClaim, nominate bool, why string) *karpv1.NodeClaim {
	np := e.pool(c.NodePool)
	if np == nil {
		return nil
	}
	o, err := e.cloud.launch(c)
	if err != nil {
		e.rec.warn(fmt.Sprintf("NodePool %s: %v", np.Name, err))
		return nil
	}
	nc := provisioning.NodeClaimFor(np, c)
	if !nominate {
		delete(nc.Annotations, snapshot.NominatedPodsAnnotation)
	}
	nc.GenerateName, nc.Name = "", e.nextClaimName(np.Name)
	nc.UID = types.UID("sim-nodeclaim-" + nc.Name)
	nc.CreationTimestamp = metav1.NewTime(e.now)
	for k, v := range instanceLabels(o) {
		nc.Labels[k] = v
	}
	nc.Status.ProviderID = kwok.ProviderIDPrefix + nc.Name
	class := e.classOf(nc)
	if class != nil {
		nc.Status.ImageID = class.Spec.Image
	}
	nc.Status.Capacity, nc.Status.Allocatable = resources(o.it)
	setCondition(nc, karpv1.ConditionTypeLaunched, e.now)
	delay := e.tl.LaunchDelay.Duration
	if f := faultsOf(class); f != nil && f.RegistrationDelay != nil {
		delay = f.RegistrationDelay.Duration
	}
	e.claimState[nc.Name] = &claimState{offering: o, launched: e.now, registerAt: e.now.Add(delay)}
	e.insertClaim(nc)
	e.starting = append(e.starting, nc)
	e.rec.launched(why)
	e.disruptChanged = true
	return nc
}

func (e *Engine) classOf(nc *karpv1.NodeClaim) *kwokv1alpha1.KWOKNodeClass {
	return e.cloud.kwokClass(nc.Spec.NodeClassRef)
}

func faultsOf(c *kwokv1alpha1.KWOKNodeClass) *kwokv1alpha1.KWOKFaults {
	if c == nil {
		return nil
	}
	return c.Spec.Faults
}

// lifecycle registers the nodes whose launch delay is over and initializes
// those whose startup taints are gone.
func (e *Engine) lifecycle() {
	kept := e.starting[:0]
	for _, nc := range e.starting {
		st := e.claimState[nc.Name]
		if nc.DeletionTimestamp != nil || st == nil {
			continue
		}
		if st.initAt.IsZero() && !e.now.Before(st.registerAt) {
			e.register(nc, st)
		}
		if !st.initAt.IsZero() && !e.now.Before(st.initAt) {
			e.initialize(nc)
			continue
		}
		kept = append(kept, nc)
	}
	e.starting = kept
}

// register creates a claim's node, with the taints it starts with, and
// decides when it will be initialized: when its startup and agent taints
// are gone and any NotReady window of its class has passed.
func (e *Engine) register(nc *karpv1.NodeClaim, st *claimState) {
	labels := map[string]string{}
	for _, r := range nc.Spec.Requirements {
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			labels[r.Key] = r.Values[0]
		}
	}
	for k, v := range nc.Labels {
		labels[k] = v
	}
	labels[corev1.LabelHostname] = nc.Name
	labels[karpv1.NodeRegisteredLabelKey] = "true"
	taints := append(append([]corev1.Taint(nil), nc.Spec.Taints...), nc.Spec.StartupTaints...)
	ready := e.now.Add(e.tl.StartupTaintDelay.Duration)
	if len(nc.Spec.StartupTaints) == 0 {
		ready = e.now
	}
	var extra []corev1.Taint
	f := faultsOf(e.classOf(nc))
	if f != nil {
		for _, a := range f.AgentTaints {
			t := corev1.Taint{Key: a.Key, Value: a.Value, Effect: a.Effect}
			if !hasTaint(taints, t) {
				taints = append(taints, t)
				extra = append(extra, t)
			}
			at := e.now.Add(e.tl.StartupTaintDelay.Duration)
			if a.RemoveAfter != nil {
				at = e.now.Add(a.RemoveAfter.Duration)
			}
			if at.After(ready) {
				ready = at
			}
		}
		if nr := f.NotReady; nr != nil && e.now.Add(nr.After.Duration).Before(ready) {
			if end := e.now.Add(nr.After.Duration + nr.For.Duration); end.After(ready) {
				ready = end
			}
		}
	}
	if len(extra) > 0 {
		nc.Annotations[snapshot.RegistrationTaintsAnnotation] = snapshot.EncodeTaints(extra)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nc.Name, Labels: labels, UID: types.UID("sim-node-" + nc.Name),
			CreationTimestamp: metav1.NewTime(e.now)},
		Spec: corev1.NodeSpec{ProviderID: nc.Status.ProviderID, Taints: taints},
		Status: corev1.NodeStatus{Capacity: nc.Status.Capacity, Allocatable: nc.Status.Allocatable,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	e.nodes = append(e.nodes, node)
	e.nodeByName[node.Name] = node
	nc.Status.NodeName = node.Name
	setCondition(nc, karpv1.ConditionTypeRegistered, e.now)
	st.initAt = ready
	e.disruptChanged = true
}

func hasTaint(ts []corev1.Taint, t corev1.Taint) bool {
	for _, x := range ts {
		if x.Key == t.Key && x.Effect == t.Effect {
			return true
		}
	}
	return false
}

// initialize removes a node's startup and agent taints, marks its claim
// initialized, and lets the DaemonSets start their pods and kube-scheduler
// (scheduleLoop) bind pending pods to it. The pods nominated to it go
// wherever kube-scheduler scores best, not necessarily here; the
// nominations end, so those that fit nowhere are planned again.
func (e *Engine) initialize(nc *karpv1.NodeClaim) {
	node := e.nodeByName[nc.Status.NodeName]
	if node == nil {
		return
	}
	drop := append(append([]corev1.Taint(nil), nc.Spec.StartupTaints...), snapshot.DecodeTaints(nc.Annotations[snapshot.RegistrationTaintsAnnotation])...)
	var kept []corev1.Taint
	for _, t := range node.Spec.Taints {
		if !hasTaint(drop, t) {
			kept = append(kept, t)
		}
	}
	node.Spec.Taints = kept
	node.Labels[karpv1.NodeInitializedLabelKey] = "true"
	setCondition(nc, karpv1.ConditionTypeInitialized, e.now)
	e.startDaemons(node)
	delete(nc.Annotations, snapshot.NominatedPodsAnnotation)
	e.provisionChanged, e.disruptChanged, e.scheduleChanged = true, true, true
}

// startDaemons binds a pod of each DaemonSet that tolerates the node's
// taints and whose node affinity matches its labels.
func (e *Engine) startDaemons(node *corev1.Node) {
	labels := scheduling.FromLabels(node.Labels)
	for _, ds := range e.daemonSets {
		p := &corev1.Pod{Spec: *ds.Spec.Template.Spec.DeepCopy()}
		tolerated := true
		for i := range node.Spec.Taints {
			t := &node.Spec.Taints[i]
			if t.Effect != corev1.TaintEffectPreferNoSchedule && !corev1helpers.TolerationsTolerateTaint(p.Spec.Tolerations, t) {
				tolerated = false
			}
		}
		if !tolerated {
			continue
		}
		matches := false
		for _, r := range scheduling.PodRequirementTerms(p) {
			matches = matches || labels.Compatible(r) == nil
		}
		if !matches {
			continue
		}
		p.Name = ds.Name + "-" + node.Name
		p.Namespace = ds.Namespace
		p.UID = types.UID("sim-pod-" + ds.Namespace + "-" + p.Name)
		p.Labels = ds.Spec.Template.Labels
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: ptrTo(true)}}
		p.Spec.NodeName = node.Name
		e.addPod(p, "")
	}
}

func ptrTo[T any](v T) *T { return &v }

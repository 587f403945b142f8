package termination

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/controller/nodeclaim"
)

func TestDrainGoesInWavesAndReleasesTheClaimLast(t *testing.T) {
	const name = "waves"
	nc := launched(t, name, nil)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	// Workload pods stay terminating until the test removes them, as if a
	// kubelet were stopping them.
	runningPod(t, name, "waves-web-1")
	runningPod(t, name, "waves-web-2")
	runningPod(t, name, "waves-agent", ownedByDaemonSet)
	runningPod(t, name, "waves-dns", systemNodeCritical, gracePeriodSeconds(0))
	runningPod(t, name, "waves-cni", systemNodeCritical, ownedByDaemonSet, gracePeriodSeconds(0))
	runningPod(t, name, "waves-tolerant", toleratingEverything)
	runningPod(t, name, "waves-mirror", func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} })
	start(t, testOptions())
	deleteClaim(t, nc)

	eventually(t, 20*time.Second, "the node to be tainted", func() (bool, error) {
		if err := cluster.Client.Get(context.Background(), client.ObjectKeyFromObject(node), node); err != nil {
			return false, err
		}
		for _, taint := range node.Spec.Taints {
			if taint.MatchTaint(&karpv1.DisruptedNoScheduleTaint) {
				return node.Labels[corev1.LabelNodeExcludeBalancers] != "" && !node.Spec.Unschedulable, nil
			}
		}
		return false, fmt.Errorf("taints %v", node.Spec.Taints)
	})
	eventually(t, 20*time.Second, "workload pods to be evicted", func() (bool, error) {
		for _, p := range []string{"waves-web-1", "waves-web-2"} {
			if ok, err := evicted(p); !ok {
				return false, err
			}
		}
		return true, nil
	})
	consistently(t, 2*time.Second, "DaemonSet and critical pods waiting for the workloads", func() (bool, error) {
		for _, p := range []string{"waves-agent", "waves-dns", "waves-cni"} {
			if ok, err := untouched(p); !ok {
				return false, err
			}
		}
		return true, nil
	})
	if c := condition(t, name, nodeclaim.ConditionTypeDrained); c == nil || c.Reason != ReasonDraining {
		t.Fatalf("Drained condition while draining: %+v", c)
	}
	eventually(t, 10*time.Second, "Draining and Evicted events", func() (bool, error) {
		if ok, err := hasEvent(name, "Draining", "waiting for")(); !ok {
			return false, err
		}
		return hasEvent(name, "Evicted", "default/waves-web-1")()
	})

	for _, p := range []string{"waves-web-1", "waves-web-2"} {
		forceDelete(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: p}})
	}
	eventually(t, 20*time.Second, "the DaemonSet pod to be evicted", func() (bool, error) { return evicted("waves-agent") })
	consistently(t, time.Second, "critical pods waiting for the DaemonSet pod", func() (bool, error) {
		for _, p := range []string{"waves-dns", "waves-cni"} {
			if ok, err := untouched(p); !ok {
				return false, err
			}
		}
		return exists(nc)()
	})

	forceDelete(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "waves-agent"}})
	// The critical pods have no grace period: evicted, they are gone.
	eventually(t, 20*time.Second, "the claim to be released", gone(nc))
	eventually(t, 5*time.Second, "the node to be deleted", gone(node))
	for _, p := range []string{"waves-dns", "waves-cni"} {
		if ok, err := evicted(p); !ok {
			t.Errorf("critical pod was never evicted: %v", err)
		}
	}
	for _, p := range []string{"waves-tolerant", "waves-mirror"} {
		if ok, err := untouched(p); !ok {
			t.Errorf("a pod the drain must pass over was evicted: %v", err)
		}
	}
}

func TestPodDisruptionBudgetHoldsTheNode(t *testing.T) {
	const name = "pdb"
	nc := launched(t, name, nil)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	runningPod(t, name, "pdb-web", labelled("app", "pdb-web"), gracePeriodSeconds(0))
	runningPod(t, name, "pdb-api", labelled("app", "pdb-api"), gracePeriodSeconds(0))
	webBudget := pdb(t, "pdb-web", "pdb-web", 0)
	apiBudget := pdb(t, "pdb-api", "pdb-api", 1)
	pdb(t, "pdb-api-2", "pdb-api", 1) // two budgets over one pod: the API server refuses with a 500
	start(t, testOptions())
	deleteClaim(t, nc)

	eventually(t, 20*time.Second, "FailedDraining events naming the budget and the double budget", func() (bool, error) {
		if ok, err := hasEvent(name, "FailedDraining", "The disruption budget pdb-web needs")(); !ok {
			return false, err
		}
		return hasEvent(name, "FailedDraining", "more than one PodDisruptionBudget")()
	})
	consistently(t, 3*time.Second, "the budget to hold the pod, the node and the claim", func() (bool, error) {
		for _, p := range []string{"pdb-web", "pdb-api"} {
			if ok, err := untouched(p); !ok {
				return false, err
			}
		}
		if ok, err := exists(node)(); !ok {
			return false, err
		}
		return exists(nc)()
	})

	// The disruption controller would now see room for one disruption.
	setAllowed(t, webBudget, 1)
	eventually(t, 20*time.Second, "the budgeted pod to be evicted", func() (bool, error) { return evicted("pdb-web") })
	consistently(t, 2*time.Second, "the doubly budgeted pod to hold the claim", exists(nc))
	if err := cluster.Client.Delete(context.Background(), apiBudget); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the claim to be released once no budget refuses", gone(nc))
	eventually(t, 5*time.Second, "the node to be deleted", gone(node))
}

func TestDoNotDisruptPodLastsUntilTheDeadline(t *testing.T) {
	const name = "dnd"
	grace := 12 * time.Second
	nc := launched(t, name, &grace)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	runningPod(t, name, "dnd-ci", annotatedDoNotDisrupt, gracePeriodSeconds(4))
	runningPod(t, name, "dnd-web", gracePeriodSeconds(0))
	runningPod(t, name, "dnd-agent", ownedByDaemonSet, gracePeriodSeconds(0))
	start(t, testOptions())
	deleteClaim(t, nc)

	nc = getClaim(t, name)
	deadline := nc.DeletionTimestamp.Add(grace)
	eventually(t, 10*time.Second, "the deadline annotation", func() (bool, error) {
		got := getClaim(t, name).Annotations[karpv1.NodeClaimTerminationTimestampKey]
		return got == FormatDeadline(deadline), fmt.Errorf("annotation %q, want %q", got, FormatDeadline(deadline))
	})
	eventually(t, 10*time.Second, "the workload pod to be evicted", func() (bool, error) { return evicted("dnd-web") })
	// The pod falls due a second before the deadline less its grace period,
	// so that it gets all of it. Until then it is neither evicted nor
	// deleted, and holds the DaemonSet pod back.
	due := deadline.Add(-5 * time.Second)
	consistently(t, time.Until(due)-500*time.Millisecond, "the do-not-disrupt pod to stay", func() (bool, error) {
		if ok, err := untouched("dnd-agent"); !ok {
			return false, err
		}
		return untouched("dnd-ci")
	})
	var ci *corev1.Pod
	eventually(t, 10*time.Second, "the do-not-disrupt pod to be deleted", func() (bool, error) {
		p, err := getPod("dnd-ci")
		ci = p
		return err == nil && p.DeletionTimestamp != nil, err
	})
	deletedAt := ci.DeletionTimestamp.Add(-time.Duration(*ci.DeletionGracePeriodSeconds) * time.Second)
	if deletedAt.Before(due.Add(-time.Second)) || ci.DeletionTimestamp.After(deadline) || *ci.DeletionGracePeriodSeconds != 4 {
		t.Errorf("pod deleted at %s with %ds of grace (want its 4s); due at %s, deadline %s", deletedAt, *ci.DeletionGracePeriodSeconds, due, deadline)
	}
	if ok, _ := hasEvent(name, "Evicted", "dnd-ci")(); ok {
		t.Error("the do-not-disrupt pod was evicted")
	}
	if time.Now().Before(deadline) {
		if ok, err := exists(nc)(); !ok {
			t.Fatalf("claim released before the deadline: %v", err)
		}
	}
	eventually(t, 20*time.Second, "the claim to be released after the deadline", gone(nc))
	if time.Now().Before(deadline) {
		t.Errorf("claim released at %s, before the deadline %s", time.Now(), deadline)
	}
	eventually(t, 5*time.Second, "the node to be deleted", gone(node))
	if ok, err := hasEvent(name, "TerminationGracePeriodExpiring", FormatDeadline(deadline))(); !ok {
		t.Error(err)
	}
}

func TestVolumeAttachmentsAreWaitedFor(t *testing.T) {
	const name = "volumes"
	ctx := context.Background()
	nc := launched(t, name, nil)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, c := range []struct{ claim, volume string }{{"volumes-web", "pv-volumes-web"}, {"volumes-agent", "pv-volumes-agent"}} {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: c.claim},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				VolumeName: c.volume,
				Resources:  corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
		if err := cluster.Client.Create(ctx, pvc); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), pvc) })
	}
	attach := func(va, pv string) *storagev1.VolumeAttachment {
		a := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: va},
			Spec: storagev1.VolumeAttachmentSpec{Attacher: "csi.example.com", NodeName: name,
				Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}}}
		if err := cluster.Client.Create(ctx, a); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), a) })
		return a
	}
	web := attach("va-volumes-web", "pv-volumes-web")
	attach("va-volumes-agent", "pv-volumes-agent")
	runningPod(t, name, "volumes-web", mountingClaim("volumes-web"), gracePeriodSeconds(0))
	runningPod(t, name, "volumes-agent", mountingClaim("volumes-agent"), toleratingEverything)
	start(t, testOptions())
	deleteClaim(t, nc)

	eventually(t, 20*time.Second, "the claim to wait for the web volume", func() (bool, error) {
		c := condition(t, name, nodeclaim.ConditionTypeVolumesDetached)
		if c == nil || c.Reason != ReasonAwaitingVolumeDetachment {
			return false, fmt.Errorf("VolumesDetached %+v", c)
		}
		return c.Message == "Awaiting deletion of 1 VolumeAttachments bound to the node: va-volumes-web", fmt.Errorf("message %q", c.Message)
	})
	if ok, err := evicted("volumes-web"); !ok {
		t.Fatal(err)
	}
	consistently(t, 2*time.Second, "the attachment to hold the node", func() (bool, error) {
		if ok, err := exists(node)(); !ok {
			return false, err
		}
		return exists(nc)()
	})
	if ok, err := hasEvent(name, ReasonAwaitingVolumeDetachment, "va-volumes-web")(); !ok {
		t.Error(err)
	}
	// The attach/detach controller detaches the volume.
	if err := cluster.Client.Delete(ctx, web); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the claim to be released", gone(nc))
	eventually(t, 5*time.Second, "the node to be deleted", gone(node))
}

func TestRestartedControllerContinuesTheDrain(t *testing.T) {
	const name = "restart"
	nc := launched(t, name, nil)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	runningPod(t, name, "restart-web", labelled("app", "restart-web"), gracePeriodSeconds(0))
	runningPod(t, name, "restart-api", gracePeriodSeconds(0))
	runningPod(t, name, "restart-agent", ownedByDaemonSet, gracePeriodSeconds(0))
	budget := pdb(t, "restart-web", "restart-web", 0)
	stop := start(t, testOptions())
	deleteClaim(t, nc)
	eventually(t, 20*time.Second, "the unbudgeted pod to be evicted", func() (bool, error) { return evicted("restart-api") })
	eventually(t, 10*time.Second, "the budget to refuse", hasEvent(name, "FailedDraining", "restart-web"))
	stop()

	setAllowed(t, budget, 1)
	consistently(t, time.Second, "nothing to move with the controller down", func() (bool, error) { return untouched("restart-web") })
	start(t, testOptions())
	eventually(t, 20*time.Second, "the new controller to finish the drain", gone(nc))
	eventually(t, 5*time.Second, "the node to be deleted", gone(node))
	for _, p := range []string{"restart-web", "restart-agent"} {
		if ok, err := evicted(p); !ok {
			t.Error(err)
		}
	}
}

func TestTerminatingPodIsNotWaitedForEver(t *testing.T) {
	// No kubelet finishes this pod: once its grace period and StuckAfter
	// have passed, the drain stops waiting for it.
	const name = "stuck"
	nc := launched(t, name, nil)
	runningPod(t, name, "stuck-web", gracePeriodSeconds(1))
	o := testOptions()
	o.StuckAfter = time.Second
	start(t, o)
	deleteClaim(t, nc)
	eventually(t, 10*time.Second, "the pod to be evicted", func() (bool, error) { return evicted("stuck-web") })
	eventually(t, 20*time.Second, "the claim to be released", gone(nc))
	if ok, err := evicted("stuck-web"); !ok {
		t.Fatal(err)
	}
}

func TestClaimWithoutNodeIsReleasedAtOnce(t *testing.T) {
	// The node is gone (the instance vanished): pods still bound to its name
	// are pod garbage collection's to remove, not the drain's to wait for.
	const name = "nonode"
	nc := launched(t, name, nil)
	runningPod(t, name, "nonode-web")
	if err := cluster.Client.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	start(t, testOptions())
	deleteClaim(t, nc)
	eventually(t, 20*time.Second, "the claim to be released", gone(nc))
	if ok, err := untouched("nonode-web"); !ok {
		t.Fatal(err)
	}
}

// TestEvictionWaitsForRoomOnAReadyNode: the drained node's pod has no room
// on the one ready node while a new node of the NodePool could take it, so
// it is not evicted and the Drained condition says why; when room frees
// on the ready node, it is evicted.
func TestEvictionWaitsForRoomOnAReadyNode(t *testing.T) {
	ctx := context.Background()
	class := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "room"}}
	if err := cluster.Client.Create(ctx, class); err != nil {
		t.Fatal(err)
	}
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "room"}, Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{
		Spec: karpv1.NodeClaimTemplateSpec{NodeClassRef: &karpv1.NodeClassReference{Group: kwokv1alpha1.SchemeGroupVersion.Group, Kind: "KWOKNodeClass", Name: "room"},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{NodeSelectorRequirement: corev1.NodeSelectorRequirement{
				Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}}}}}}}}
	if err := cluster.Client.Create(ctx, np); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Client.Delete(ctx, np); _ = cluster.Client.Delete(ctx, class) })
	sized := func(name string) {
		t.Helper()
		launched(t, name, nil)
		n := &corev1.Node{}
		if err := cluster.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			t.Fatal(err)
		}
		n.Labels[corev1.LabelHostname] = name
		n.Labels[corev1.LabelOSStable] = "linux"
		n.Labels[corev1.LabelArchStable] = "amd64"
		n.Spec.Taints = nil // the API server's not-ready taint: no kubelet here says otherwise
		if err := cluster.Client.Update(ctx, n); err != nil {
			t.Fatal(err)
		}
		n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
		n.Status.Capacity = n.Status.Allocatable
		if err := cluster.Client.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	cpu := func(v string) podOption {
		return func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v), corev1.ResourceMemory: resource.MustParse("1Gi")}
		}
	}
	sized("room-ready")
	sized("room-drained")
	other := runningPod(t, "room-ready", "room-other", cpu("3"), gracePeriodSeconds(0))
	runningPod(t, "room-drained", "room-moving", cpu("2"), gracePeriodSeconds(0))
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "room-drained"}}
	if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
		t.Fatal(err)
	}
	startWith(t, testOptions(), true)
	deleteClaim(t, nc)

	eventually(t, 20*time.Second, "the Drained condition to say the pod waits for room", func() (bool, error) {
		got := &karpv1.NodeClaim{}
		if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, nodeclaim.ConditionTypeDrained)
		return c != nil && strings.Contains(c.Message, WaitNoRoom), fmt.Errorf("Drained condition %+v", c)
	})
	consistently(t, 3*time.Second, "the pod with nowhere to go to stay", func() (bool, error) { return untouched("room-moving") })

	forceDelete(t, other)
	eventually(t, 20*time.Second, "the pod to be evicted once the ready node has room", func() (bool, error) {
		ok, err := evicted("room-moving")
		if !ok {
			got := &karpv1.NodeClaim{}
			_ = cluster.Client.Get(ctx, client.ObjectKeyFromObject(nc), got)
			var pods corev1.PodList
			_ = cluster.Client.List(ctx, &pods)
			var names []string
			for _, p := range pods.Items {
				names = append(names, p.Name+"@"+p.Spec.NodeName)
			}
			err = fmt.Errorf("%v; Drained %+v; pods %v", err, meta.FindStatusCondition(got.Status.Conditions, nodeclaim.ConditionTypeDrained), names)
		}
		return ok, err
	})
}

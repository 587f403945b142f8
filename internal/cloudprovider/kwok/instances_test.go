package kwok

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
)

func TestRegistrationDelaySurvivesRestart(t *testing.T) {
	e := newEnv(t, ProviderOptions{})
	class := e.nodeClass(&kwokv1alpha1.KWOKFaults{RegistrationDelay: duration(30 * time.Second)})
	claim := e.mustLaunch(e.claim(class, req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.large")))
	if claim.Annotations[RegistrationDelayAnnotation] != "30s" {
		t.Errorf("%s = %q", RegistrationDelayAnnotation, claim.Annotations[RegistrationDelayAnnotation])
	}
	if e.node(claim.Name) != nil {
		t.Fatal("Node created at launch despite the registration delay")
	}
	inst, err := e.p.Get(e.ctx, claim.Status.ProviderID)
	if err != nil {
		t.Fatalf("Get of the pending instance: %v", err)
	}
	if inst.Name != claim.Name || inst.Status.NodeName != "" || inst.Labels[corev1.LabelInstanceTypeStable] != "c5.large" ||
		!equalResources(inst.Status.Capacity, claim.Status.Capacity) || !inst.CreationTimestamp.Time.Equal(epoch) {
		t.Errorf("pending instance %+v %+v", inst.ObjectMeta, inst.Status)
	}
	e.sync(e.p, 29*time.Second)
	if e.node(claim.Name) != nil {
		t.Fatal("Node created before the delay passed")
	}

	// The controller restarts; the new process creates the Node on time.
	restarted := e.restart()
	e.sync(restarted, 30*time.Second)
	node := e.mustNode(claim.Name)
	if node.Labels[corev1.LabelInstanceTypeStable] != "c5.large" || node.Labels[karpv1.NodePoolLabelKey] != "pool" ||
		!slices.Contains(node.Spec.Taints, karpv1.UnregisteredNoExecuteTaint) || node.Annotations[ImageAnnotation] != "img-1" {
		t.Errorf("Node labels %v taints %v annotations %v", node.Labels, node.Spec.Taints, node.Annotations)
	}
	if got := node.Annotations[CreatedAtAnnotation]; got != epoch.Add(30*time.Second).Format(time.RFC3339Nano) {
		t.Errorf("%s = %q", CreatedAtAnnotation, got)
	}
	if !equalResources(node.Status.Allocatable, claim.Status.Allocatable) {
		t.Errorf("Node allocatable %v, claim %v", node.Status.Allocatable, claim.Status.Allocatable)
	}
	inst, err = restarted.Get(e.ctx, claim.Status.ProviderID)
	if err != nil || inst.Status.NodeName != claim.Name {
		t.Errorf("Get after registration: %+v, %v", inst, err)
	}
	e.sync(restarted, 31*time.Second) // a second pass changes nothing
	if again := e.mustNode(claim.Name); again.ResourceVersion != node.ResourceVersion {
		t.Error("a second pass changed the Node")
	}
}

func TestPendingInstanceEnds(t *testing.T) {
	e := newEnv(t, ProviderOptions{RegistrationGrace: time.Minute,
		DefaultFaults: kwokv1alpha1.KWOKFaults{RegistrationDelay: duration(30 * time.Second)}})
	class := e.nodeClass(nil) // the provider's default delay applies

	t.Run("lost after the grace", func(t *testing.T) {
		e.clock.SetTime(epoch)
		claim := e.mustLaunch(e.claim(class))
		e.sync(e.p, 90*time.Second) // exactly the delay plus the grace
		if e.node(claim.Name) != nil {
			t.Error("Node created past the grace")
		}
		if _, err := e.p.Get(e.ctx, claim.Status.ProviderID); !cloudprovider.IsNotFound(err) {
			t.Errorf("Get: %v, want NotFoundError", err)
		}
	})
	t.Run("deleted with its claim", func(t *testing.T) {
		e.clock.SetTime(epoch)
		claim := e.mustLaunch(e.claim(class))
		// Delete of a pending instance succeeds; it ends with its claim.
		if err := e.p.Delete(e.ctx, claim); err != nil {
			t.Fatal(err)
		}
		if err := e.c.Delete(e.ctx, claim); err != nil {
			t.Fatal(err)
		}
		e.sync(e.p, 40*time.Second)
		if e.node(claim.Name) != nil {
			t.Error("Node created for a deleted claim")
		}
		if err := e.p.Delete(e.ctx, claim); !cloudprovider.IsNotFound(err) {
			t.Errorf("Delete after the claim went: %v, want NotFoundError", err)
		}
	})
	t.Run("registered claim without Node is gone", func(t *testing.T) {
		e.clock.SetTime(epoch)
		claim := e.mustLaunch(e.claim(class))
		stored := &karpv1.NodeClaim{}
		if err := e.c.Get(e.ctx, client.ObjectKeyFromObject(claim), stored); err != nil {
			t.Fatal(err)
		}
		stored.Status.NodeName = claim.Name
		if err := e.c.Status().Update(e.ctx, stored); err != nil {
			t.Fatal(err)
		}
		e.sync(e.p, 40*time.Second)
		if e.node(claim.Name) != nil {
			t.Error("Node recreated for a claim that had registered")
		}
		if _, err := e.p.Get(e.ctx, claim.Status.ProviderID); !cloudprovider.IsNotFound(err) {
			t.Errorf("Get: %v, want NotFoundError", err)
		}
	})
}

func TestGetListDelete(t *testing.T) {
	e := newEnv(t, ProviderOptions{})
	class := e.nodeClass(nil)
	slow := e.nodeClass(&kwokv1alpha1.KWOKFaults{RegistrationDelay: duration(time.Minute)})
	running := e.mustLaunch(e.claim(class, req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large")))
	pending := e.mustLaunch(e.claim(slow))

	inst, err := e.p.Get(e.ctx, running.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Name != running.Name || inst.Status.NodeName != running.Name || inst.Status.ImageID != "img-1" ||
		inst.Labels[corev1.LabelInstanceTypeStable] != "m5.large" || !equalResources(inst.Status.Allocatable, running.Status.Allocatable) {
		t.Errorf("Get: %+v %+v", inst.ObjectMeta, inst.Status)
	}
	if _, err := e.p.Get(e.ctx, "kwok://no-such-instance"); !cloudprovider.IsNotFound(err) {
		t.Errorf("Get of an unknown instance: %v, want NotFoundError", err)
	}
	if _, err := e.p.Get(e.ctx, "aws:///zone-a/i-123"); err == nil || cloudprovider.IsNotFound(err) {
		t.Errorf("Get of a foreign provider ID: %v, want an error saying it is not kwok's", err)
	}
	// A Node that kwok runs but nodewright did not launch is no instance.
	stranger := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name("stranger"), Annotations: map[string]string{KWOKNodeAnnotation: "fake"}}}
	stranger.Spec.ProviderID = "kwok://" + stranger.Name
	if err := e.c.Create(e.ctx, stranger); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.c.Delete(context.Background(), stranger) })

	list, err := e.p.List(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, inst := range list {
		if inst.Name == running.Name || inst.Name == pending.Name || inst.Name == stranger.Name {
			listed = append(listed, inst.Name+"@"+inst.Status.NodeName)
		}
	}
	if want := []string{running.Name + "@" + running.Name, pending.Name + "@"}; !slices.Equal(listed, want) {
		t.Errorf("List gave %v, want %v", listed, want)
	}

	// Delete runs until the Node is gone, then says not found.
	node := e.mustNode(running.Name)
	node.Finalizers = []string{"test.nodewright.dev/hold"}
	if err := e.c.Update(e.ctx, node); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := e.p.Delete(e.ctx, running); err != nil {
			t.Fatalf("Delete while the Node goes: %v", err)
		}
	}
	node = e.mustNode(running.Name)
	node.Finalizers = nil
	if err := e.c.Update(e.ctx, node); err != nil {
		t.Fatal(err)
	}
	if err := e.p.Delete(e.ctx, running); !cloudprovider.IsNotFound(err) {
		t.Errorf("Delete after the Node went: %v, want NotFoundError", err)
	}
	if _, err := e.p.Get(e.ctx, running.Status.ProviderID); !cloudprovider.IsNotFound(err) {
		t.Errorf("Get after Delete: %v, want NotFoundError", err)
	}

	// A controller that crashed before saving the provider ID still deletes
	// the Node it made.
	unsaved := e.claim(class)
	if _, err := e.p.Create(e.ctx, unsaved); err != nil {
		t.Fatal(err)
	}
	if err := e.p.Delete(e.ctx, unsaved); err != nil {
		t.Fatal(err)
	}
	if e.node(unsaved.Name) != nil {
		t.Error("Node of a claim without provider ID survived Delete")
	}
}

func TestIsDrifted(t *testing.T) {
	e := newEnv(t, ProviderOptions{})
	class := e.nodeClass(nil)
	claim := e.mustLaunch(e.claim(class))
	nc := &kwokv1alpha1.KWOKNodeClass{}
	if err := e.c.Get(e.ctx, client.ObjectKey{Name: class}, nc); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, classImage, claimImage, want string
	}{
		{"same image", "img-1", "img-1", ""},
		{"new image", "img-2", "img-1", DriftReasonImage},
		{"image not known yet", "img-2", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nc.Spec.Image = tc.classImage
			if err := e.c.Update(e.ctx, nc); err != nil {
				t.Fatal(err)
			}
			c := claim.DeepCopy()
			c.Status.ImageID = tc.claimImage
			got, err := e.p.IsDrifted(e.ctx, c)
			if err != nil || got != tc.want {
				t.Errorf("IsDrifted = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	missing := claim.DeepCopy()
	missing.Spec.NodeClassRef.Name = "no-such-class"
	var nr *cloudprovider.NodeClassNotReadyError
	if _, err := e.p.IsDrifted(e.ctx, missing); !errors.As(err, &nr) || !strings.Contains(err.Error(), "no-such-class") {
		t.Errorf("IsDrifted with a missing class: %v", err)
	}
}

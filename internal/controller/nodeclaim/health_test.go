package nodeclaim

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
	"github.com/nodewright/nodewright/internal/controller/nodepool"
)

func registrationHealth(np *karpv1.NodePool) *metav1.Condition {
	return meta.FindStatusCondition(np.Status.Conditions, nodepool.ConditionNodeRegistrationHealthy)
}

// TestNodeRegistrationHealthFollowsRegistrations, against a real API
// server with the lifecycle and NodePool status controllers running: one
// NodeClaim that never registers leaves the NodePool's
// NodeRegistrationHealthy as it was, a second makes it False naming that
// claim, nodes registering make it True again once failures are under half
// of the last four, and a change to the NodePool's spec makes it Unknown.
func TestNodeRegistrationHealthFollowsRegistrations(t *testing.T) {
	opts := DefaultOptions()
	opts.RegistrationTimeout = 3 * time.Second
	reg := runControllers(t, opts)
	// The Nodes of this class never appear by themselves; the test creates
	// those that are to register.
	createClass(t, "rh", time.Hour)
	np := createPool(t, "rh", "rh", "0s", 0)

	unknown := func(np *karpv1.NodePool) bool {
		c := registrationHealth(np)
		return c != nil && c.Status == metav1.ConditionUnknown && c.ObservedGeneration == np.Generation
	}
	waitPool(t, "rh", "NodeRegistrationHealthy Unknown", unknown)

	gone := func(nc *karpv1.NodeClaim) bool { return nc.DeletionTimestamp != nil }
	createClaim(t, np, "rh-lost-1")
	waitClaim(t, "rh-lost-1", "deleted at the registration timeout", gone)
	createClaim(t, np, "rh-lost-2")
	waitClaim(t, "rh-lost-2", "deleted at the registration timeout", gone)
	failed := waitPool(t, "rh", "NodeRegistrationHealthy False", func(np *karpv1.NodePool) bool {
		c := registrationHealth(np)
		return c != nil && c.Status == metav1.ConditionFalse
	})
	c := registrationHealth(failed)
	if c.Reason != nodepool.ReasonRegistrationFailed || !strings.Contains(c.Message, "NodeClaim rh-lost-2: no node with providerID kwok://rh-lost-2 registered within 3s") {
		t.Errorf("NodeRegistrationHealthy %s %q, want reason %s naming NodeClaim rh-lost-2", c.Reason, c.Message, nodepool.ReasonRegistrationFailed)
	}
	t.Logf("after two NodeClaims did not register: NodeRegistrationHealthy=%s %s: %s", c.Status, c.Reason, c.Message)

	// Three nodes register. After the first two the last four outcomes
	// still hold two failures (TestRegistrationHealthy); the third makes it
	// True.
	for _, name := range []string{"rh-ok-1", "rh-ok-2", "rh-ok-3"} {
		createClaim(t, np, name)
		nc := waitClaim(t, name, "launched", func(nc *karpv1.NodeClaim) bool { return nc.Status.ProviderID != "" })
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{kwok.NodeClaimAnnotation: name}},
			Spec: corev1.NodeSpec{ProviderID: nc.Status.ProviderID, Taints: []corev1.Taint{karpv1.UnregisteredNoExecuteTaint}}}
		if err := cluster.Client.Create(context.Background(), node); err != nil {
			t.Fatal(err)
		}
		waitClaim(t, name, "registered", func(nc *karpv1.NodeClaim) bool {
			return meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeRegistered)
		})
	}
	var got []string
	for _, o := range reg.Outcomes(np, 0) {
		got = append(got, fmt.Sprintf("%s:%v", o.NodeClaim, o.Registered))
	}
	if want := "rh-lost-2:false rh-ok-1:true rh-ok-2:true rh-ok-3:true"; strings.Join(got, " ") != want {
		t.Errorf("outcomes recorded %q, want %q", got, want)
	}
	waitPool(t, "rh", "NodeRegistrationHealthy True", func(np *karpv1.NodePool) bool {
		c := registrationHealth(np)
		return c != nil && c.Status == metav1.ConditionTrue
	})

	// A spec change starts it over.
	cur := &karpv1.NodePool{}
	if err := cluster.Client.Get(context.Background(), client.ObjectKey{Name: "rh"}, cur); err != nil {
		t.Fatal(err)
	}
	before := cur.DeepCopy()
	cur.Spec.Template.Labels = map[string]string{"team": "a"}
	if err := cluster.Client.Patch(context.Background(), cur, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	changed := waitPool(t, "rh", "NodeRegistrationHealthy Unknown after the spec changed", unknown)
	t.Logf("after the spec changed: NodeRegistrationHealthy=%s %s: %s", registrationHealth(changed).Status, registrationHealth(changed).Reason, registrationHealth(changed).Message)
}

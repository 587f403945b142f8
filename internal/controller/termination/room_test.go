package termination

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/room/roomtest"
	"github.com/nodewright/nodewright/internal/snapshot"
)

// TestEvictionWaitsForRoom: a pod no ready node has room for waits, and
// holds back the waves after it, until RoomWait after the claim's deletion;
// then it is evicted anyway.
func TestEvictionWaitsForRoom(t *testing.T) {
	noRoom := map[types.UID]string{"web": "no ready node has room for it"}
	for _, tc := range []struct {
		name        string
		deletedAgo  time.Duration
		noRoom      map[types.UID]string
		evict       []string
		waiting     []string
		recheckWant time.Time
	}{
		{name: "room everywhere", deletedAgo: 10 * time.Second, evict: []string{"api", "web"},
			waiting: []string{"api: being evicted", "daemon: waits for an earlier wave", "web: being evicted"}},
		{name: "no room yet", deletedAgo: 10 * time.Second, noRoom: noRoom, evict: []string{"api"},
			waiting:     []string{"api: being evicted", "daemon: waits for an earlier wave", "web: waits for room on a ready node"},
			recheckWant: now.Add(RoomRecheck)},
		{name: "waited long enough", deletedAgo: 6 * time.Minute, noRoom: noRoom, evict: []string{"api", "web"},
			waiting: []string{"api: being evicted", "daemon: waits for an earlier wave", "web: being evicted"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := claim(func(nc *karpv1.NodeClaim) { nc.DeletionTimestamp = &metav1.Time{Time: now.Add(-tc.deletedAgo)} })
			p := Decide(Input{Claim: nc, Node: readyNode(), Pods: []*corev1.Pod{pod("web"), pod("api"), pod("daemon", daemon)},
				Now: now, NoRoom: tc.noRoom, RoomWait: 5 * time.Minute})
			if got := names(p.Evict); !reflect.DeepEqual(got, tc.evict) {
				t.Errorf("evict %v, want %v", got, tc.evict)
			}
			if got := reasons(p.Waiting); !reflect.DeepEqual(got, tc.waiting) {
				t.Errorf("waiting %v, want %v", got, tc.waiting)
			}
			if !p.RecheckAt.Equal(tc.recheckWant) {
				t.Errorf("recheck at %v, want %v", p.RecheckAt, tc.recheckWant)
			}
		})
	}
}

var catalog = kwok.Build(kwok.BuiltinCatalog(), kwok.Options{VMMemoryOverheadPercent: instancetype.DefaultVMMemoryOverheadPercent})

// c5xlarge is the room tests' usual node size: 4 CPUs.
func c5xlarge() corev1.ResourceList {
	for _, x := range catalog {
		if x.Name == "c5.xlarge" {
			return x.Allocatable()
		}
	}
	panic("c5.xlarge is not in the kwok catalog")
}

// roomPool is the NodePool "p" the room tests' nodes belong to.
var roomPool = &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{
	Spec: karpv1.NodeClaimTemplateSpec{NodeClassRef: &karpv1.NodeClassReference{Group: "nodewright.dev", Kind: "KWOKNodeClass", Name: "default"}}}}}

// roomNode builds a claim of NodePool "p" and its node, of alloc; deleting
// marks the claim deleted a minute ago, initialized an hour ago.
func roomNode(name string, alloc corev1.ResourceList, deleting, initialized bool) (*karpv1.NodeClaim, *corev1.Node) {
	return roomtest.Node(name, alloc, deleting, initialized, now)
}

// roomPod builds a running pod (pending when node is "") asking for cpu
// and 1Gi, created at created.
func roomPod(name, node, cpu string, created time.Time) *corev1.Pod {
	return roomtest.Pod(name, node, cpu, created, 0)
}

// TestNoRoom: a draining node's pod is held only when no ready node can
// take it and a new node could; a node still starting does not count as
// room, and a pod that fits nowhere is not held.
func TestNoRoom(t *testing.T) {
	for _, tc := range []struct {
		name string
		// other is the cpu the pod on the other, ready node requests.
		other       string
		starting    bool
		pools, want bool
		// pending is the cpu of a pod kube-scheduler found no room for.
		pending string
	}{
		{name: "a ready node has room", other: "1", pools: true, want: false},
		{name: "no ready node has room, a new node would", other: "3", pools: true, want: true},
		{name: "only a starting node has room", other: "1", starting: true, pools: true, want: true},
		{name: "no room anywhere: waiting would not help", other: "3", pools: false, want: false},
		{name: "a pending pod takes the ready room first", other: "1", pending: "2", pools: true, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drainClaim, drainNode := roomNode("draining", c5xlarge(), true, true)
			otherClaim, otherNode := roomNode("other", c5xlarge(), false, !tc.starting)
			c := &snapshot.Cluster{NodeClaims: []*karpv1.NodeClaim{drainClaim, otherClaim}, Nodes: []*corev1.Node{drainNode, otherNode},
				Pods: []*corev1.Pod{roomPod("moving", "draining", "2", time.Time{}), roomPod("staying", "other", tc.other, time.Time{})}}
			if tc.pending != "" {
				c.Pods = append(c.Pods, roomPod("pending", "", tc.pending, time.Time{}))
			}
			poolTypes := snapshot.PoolTypes{}
			if tc.pools {
				c.NodePools = []*karpv1.NodePool{roomPool}
				poolTypes["p"] = catalog
			}
			got, err := NoRoom(snapshot.Build(c, poolTypes, snapshot.Options{Now: now, MoveDraining: true}))
			if err != nil {
				t.Fatal(err)
			}
			if _, held := got["moving"]; held != tc.want || len(got) > 1 {
				t.Errorf("held %v, want moving held %v", got, tc.want)
			}
		})
	}
}

// TestNoRoomHoldsWhatSpreadingStrands: two ready nodes have room for both
// drained pods when packed, but kube-scheduler places the first on the
// emptier node and has no room left for the second; that one is held
// while a new node could take it, and not when none could.
func TestNoRoomHoldsWhatSpreadingStrands(t *testing.T) {
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
	node := func(name string, deleting bool) (*karpv1.NodeClaim, *corev1.Node) {
		return roomNode(name, alloc, deleting, true)
	}
	busy := func(name, node, cpu string, created int) *corev1.Pod {
		return roomPod(name, node, cpu, now.Add(time.Duration(created-100)*time.Second))
	}
	for _, pools := range []bool{true, false} {
		dc, dn := node("d", true)
		ac, an := node("a", false)
		bc, bn := node("b", false)
		c := &snapshot.Cluster{NodeClaims: []*karpv1.NodeClaim{dc, ac, bc}, Nodes: []*corev1.Node{dn, an, bn},
			Pods: []*corev1.Pod{busy("d1", "d", "500m", 2), busy("d2", "d", "1100m", 3), busy("on-a", "a", "800m", 1), busy("on-b", "b", "1", 1)}}
		poolTypes := snapshot.PoolTypes{}
		if pools {
			c.NodePools = []*karpv1.NodePool{roomPool}
			poolTypes["p"] = catalog
		}
		got, err := NoRoom(snapshot.Build(c, poolTypes, snapshot.Options{Now: now, MoveDraining: true}))
		if err != nil {
			t.Fatal(err)
		}
		why, held := got["d2"]
		if held != pools || len(got) > 1 {
			t.Errorf("with a NodePool %v: held %v, want d2 held %v", pools, got, pools)
		}
		if held && !strings.Contains(why, "kube-scheduler would give the ready nodes' room") {
			t.Errorf("d2 held for %q, want kube-scheduler's order named", why)
		}
	}
}

// TestNoRoomCountsAwaitedReplacements: a pod the drain has just evicted is
// still terminating and its ReplicaSet's replacement is not in the cache
// yet; the room it will need is not free for the next drained pod. Once the
// replacement is seen it counts as itself, not twice; a DaemonSet's pod
// gets no replacement elsewhere.
func TestNoRoomCountsAwaitedReplacements(t *testing.T) {
	pod := func(name, node, cpu string, owner *metav1.OwnerReference) *corev1.Pod {
		p := roomPod(name, node, cpu, now.Add(-time.Hour))
		if owner != nil {
			p.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		return p
	}
	controller := true
	rs := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-web", Controller: &controller}
	ds := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "ds-agent", Controller: &controller}
	evicted := func(owner *metav1.OwnerReference) *corev1.Pod {
		p := pod("evicted", "draining", "2", owner)
		grace := int64(30)
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &metav1.Time{Time: now.Add(30 * time.Second)}, &grace
		return p
	}
	for _, tc := range []struct {
		name        string
		evicted     *corev1.Pod
		replacement bool
		standIns    int
		held        bool
	}{
		{name: "replacement not seen yet", evicted: evicted(rs), standIns: 1, held: true},
		{name: "replacement seen", evicted: evicted(rs), replacement: true, standIns: 0, held: true},
		{name: "a DaemonSet's pod", evicted: evicted(ds), standIns: 0, held: false},
		{name: "no pod evicted", standIns: 0, held: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dc, dn := roomNode("draining", c5xlarge(), true, true)
			oc, on := roomNode("other", c5xlarge(), false, true)
			c := &snapshot.Cluster{NodeClaims: []*karpv1.NodeClaim{dc, oc}, Nodes: []*corev1.Node{dn, on}, NodePools: []*karpv1.NodePool{roomPool},
				Pods: []*corev1.Pod{pod("moving", "draining", "2", rs), pod("staying", "other", "1", nil)}}
			if tc.evicted != nil {
				c.Pods = append(c.Pods, tc.evicted)
			}
			if tc.replacement {
				p := pod("web-new", "", "2", rs)
				p.CreationTimestamp = metav1.NewTime(now)
				c.Pods = append(c.Pods, p)
			}
			res := snapshot.Build(c, snapshot.PoolTypes{"p": catalog}, snapshot.Options{Now: now, MoveDraining: true})
			standIns := awaitedReplacements(res)
			if len(standIns) != tc.standIns {
				t.Fatalf("%d stand-ins, want %d", len(standIns), tc.standIns)
			}
			res.Input.Pods = append(res.Input.Pods, standIns...)
			got, err := NoRoom(res)
			if err != nil {
				t.Fatal(err)
			}
			if _, held := got["moving"]; held != tc.held || len(got) > 1 {
				t.Errorf("held %v, want moving held %v", got, tc.held)
			}
		})
	}
}

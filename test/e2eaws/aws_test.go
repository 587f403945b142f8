package e2eaws

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/testaws"
)

const (
	clusterName = "e2e"
	queueName   = "e2e-interruption"
	ns          = "shop"
)

// world is the running test: moto behind the front, the account, the
// kubelet harness and the controller.
type world struct {
	front *testaws.Front
	acct  *testaws.Account
	ec2   *ec2.Client
	sqs   *sqs.Client
	queue string
}

// TestAWSProviderEndToEnd runs the AWS provider's life on one cluster, in
// order: a 100-pod scale-up over two NodePools and one EC2NodeClass; a spot
// interruption; an AMI release (drift); an instance terminated behind the
// controller's back; and a 200-pod scale-up during which the controller is
// SIGKILLed five times. After each step every pod runs and moto's instances
// match the NodeClaims one to one.
func TestAWSProviderEndToEnd(t *testing.T) {
	w := setup(t)
	steps := []struct {
		name string
		run  func(*testing.T, *world)
	}{
		{"ScaleUp100Pods", scaleUp100},
		{"InsufficientCapacityFallsBack", insufficientCapacity},
		{"SpotInterruption", spotInterruption},
		{"AMIDrift", amiDrift},
		{"InstanceTerminatedBehindOurBack", terminatedBehindOurBack},
		{"ControllerKilledDuringScaleUp", killedDuringScaleUp},
	}
	for _, s := range steps {
		if !t.Run(s.name, func(t *testing.T) { s.run(t, w) }) {
			return
		}
	}
}

func setup(t *testing.T) *world {
	ctx := context.Background()
	moto := testaws.Start(t)
	front := testaws.NewFront(t, moto)
	w := &world{front: front, acct: testaws.NewAccount(t, front, clusterName), ec2: ec2.NewFromConfig(front.Config()), sqs: sqs.NewFromConfig(front.Config())}
	q, err := w.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(queueName)})
	if err != nil {
		t.Fatal(err)
	}
	w.queue = aws.ToString(q.QueueUrl)
	startKubelets(t, w.ec2)
	env.ControllerArgs = []string{
		"--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--leader-lease-duration=4s", "--leader-renew-deadline=3s", "--leader-retry-period=500ms",
		"--gc-interval=5s", "--disruption-interval=2s", "--log-level=info",
		"--cloud-provider=aws", "--cluster-name=" + clusterName, "--cluster-endpoint=https://127.0.0.1:6443",
		"--cluster-cidr=10.96.0.0/12", "--ec2nodeclass-interval=3s", "--interruption-queue=" + queueName,
	}
	// The SDK's standard chain, pointed at the front on loopback.
	env.ControllerEnv = []string{"AWS_REGION=" + testaws.Region, "AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing",
		"AWS_ENDPOINT_URL=" + front.Endpoint, "AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null"}
	if err := env.StartController(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.KillController(syscall.SIGTERM) })

	class := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: awsv1.EC2NodeClassSpec{
		SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{testaws.DiscoveryTag: clusterName}}},
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{testaws.DiscoveryTag: clusterName}}},
		AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
		Role:                       w.acct.Role,
		Tags:                       map[string]string{"team": "shop"},
	}}
	if err := kc.Create(ctx, class); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "EC2NodeClass default Ready", func() (bool, error) {
		got := &awsv1.EC2NodeClass{}
		if err := kc.Get(ctx, client.ObjectKey{Name: "default"}, got); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, "Ready")
		return c != nil && c.Status == metav1.ConditionTrue, fmt.Errorf("Ready = %+v", c)
	})
	budget := []karpv1.Budget{{Nodes: "50%"}}
	for _, p := range []struct {
		name string
		reqs []karpv1.NodeSelectorRequirementWithMinValues
	}{
		{"general", []karpv1.NodeSelectorRequirementWithMinValues{
			req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand),
			req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"),
			req("karpenter.k8s.aws/instance-category", corev1.NodeSelectorOpIn, "c", "m", "r")}},
		{"spot", []karpv1.NodeSelectorRequirementWithMinValues{
			req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot),
			req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64")}},
	} {
		np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: p.name}, Spec: karpv1.NodePoolSpec{
			Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
				NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
				Requirements: p.reqs,
			}},
			Disruption: karpv1.Disruption{ConsolidateAfter: karpv1.MustParseNillableDuration("Never"), Budgets: budget},
		}}
		if err := kc.Create(ctx, np); err != nil {
			t.Fatal(err)
		}
	}
	namespace(t, ns)
	return w
}

// scaleUp100: 100 pods of three shapes on two NodePools run on instances
// launched as the class says.
func scaleUp100(t *testing.T, w *world) {
	before := w.front.Calls()
	start := time.Now()
	deployment(t, ns, "web", 40, map[string]string{karpv1.NodePoolLabelKey: "general"}, "500m", "1Gi")
	deployment(t, ns, "api", 30, map[string]string{karpv1.NodePoolLabelKey: "spot"}, "1", "2Gi")
	deployment(t, ns, "worker", 30, nil, "250m", "512Mi")
	waitRunning(t, ns, 100, 8*time.Minute)
	took := time.Since(start)
	cs := claims(t)
	calls := testaws.CallsSince(before, w.front.Calls())
	t.Logf("100 pods Running %s after the Deployments were created, on %d NodeClaims; AWS calls meanwhile: %v", took.Round(100*time.Millisecond), len(cs), calls)
	w.checkInstances(t, "")
}

// insufficientCapacity: a NodePool pinned to c6a.large, c5a.large and
// c5.large (cheapest first), with the first two out of on-demand capacity
// in every zone: one CreateFleet launches c5.large, and no NodeClaim fails.
func insufficientCapacity(t *testing.T, w *world) {
	ctx := context.Background()
	for _, it := range []string{"c6a.large", "c5a.large"} {
		for zone := range w.acct.Subnets {
			w.front.SetInsufficientCapacity(it, zone, karpv1.CapacityTypeOnDemand, true)
		}
	}
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "pinned"}, Spec: karpv1.NodePoolSpec{
		Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand),
				req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c6a.large", "c5a.large", "c5.large")},
		}},
		Disruption: karpv1.Disruption{ConsolidateAfter: karpv1.MustParseNillableDuration("Never")},
	}}
	if err := kc.Create(ctx, np); err != nil {
		t.Fatal(err)
	}
	namespace(t, "ice")
	before := w.front.Calls()
	deployment(t, "ice", "pinned", 1, map[string]string{karpv1.NodePoolLabelKey: "pinned"}, "1", "1Gi")
	seen := map[string]bool{}
	eventually(t, 4*time.Minute, "the pinned pod Running", func() (bool, error) {
		for _, c := range claims(t) {
			if c.Labels[karpv1.NodePoolLabelKey] == "pinned" {
				seen[c.Name] = true
			}
		}
		running, other, err := podCounts("ice")
		return err == nil && running == 1 && other == 0, fmt.Errorf("%d running, %d not (err %v)", running, other, err)
	})
	var launched []string
	for _, c := range claims(t) {
		if c.Labels[karpv1.NodePoolLabelKey] == "pinned" {
			launched = append(launched, c.Labels[corev1.LabelInstanceTypeStable])
		}
	}
	if !slices.Equal(launched, []string{"c5.large"}) || len(seen) != 1 {
		t.Errorf("pinned NodeClaims launched as %v (%d NodeClaims seen); want one c5.large", launched, len(seen))
	}
	if calls := testaws.CallsSince(before, w.front.Calls()); calls["ec2:CreateFleet"] != 1 {
		t.Errorf("%d CreateFleet calls, want 1: the fallback happens within one launch (calls %v)", calls["ec2:CreateFleet"], calls)
	}
	w.checkInstances(t, "")
}

// checkInstances compares moto's live instances of the cluster with the
// NodeClaims: one each, of the claim's type, zone and capacity type, in a
// tagged subnet of its zone, from the image the class's alias names for its
// architecture (x86Image for amd64; "" is the account's first), launched
// with the tagged security group, IMDSv2 required and the tags.
func (w *world) checkInstances(t *testing.T, x86Image string) {
	t.Helper()
	if x86Image == "" {
		x86Image = w.acct.Images["x86_64"][0]
	}
	live := w.liveInstances(t)
	byClaim := map[string]ec2types.Instance{}
	for _, inst := range live {
		name := tag(inst, "karpenter.sh/nodeclaim")
		if _, dup := byClaim[name]; dup {
			t.Errorf("two live instances for NodeClaim %s", name)
		}
		byClaim[name] = inst
	}
	cs := claims(t)
	launched := 0
	for _, c := range cs {
		if c.Status.ProviderID == "" || c.DeletionTimestamp != nil {
			continue
		}
		launched++
		inst, ok := byClaim[c.Name]
		if !ok {
			t.Errorf("NodeClaim %s (%s) has no live instance", c.Name, c.Status.ProviderID)
			continue
		}
		id := aws.ToString(inst.InstanceId)
		zone := aws.ToString(inst.Placement.AvailabilityZone)
		if got, want := c.Status.ProviderID, "aws:///"+zone+"/"+id; got != want {
			t.Errorf("NodeClaim %s providerID %s, want %s", c.Name, got, want)
		}
		if string(inst.InstanceType) != c.Labels[corev1.LabelInstanceTypeStable] || zone != c.Labels[corev1.LabelTopologyZone] {
			t.Errorf("NodeClaim %s says %s in %s; the instance is %s in %s", c.Name, c.Labels[corev1.LabelInstanceTypeStable], c.Labels[corev1.LabelTopologyZone], inst.InstanceType, zone)
		}
		if aws.ToString(inst.SubnetId) != w.acct.Subnets[zone] {
			t.Errorf("instance %s in subnet %s, want the tagged subnet of %s (%s)", id, aws.ToString(inst.SubnetId), zone, w.acct.Subnets[zone])
		}
		spot := inst.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot
		if spot != (c.Labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeSpot) {
			t.Errorf("instance %s spot=%v, NodeClaim %s says %s", id, spot, c.Name, c.Labels[karpv1.CapacityTypeLabelKey])
		}
		want := x86Image
		if c.Labels[corev1.LabelArchStable] == "arm64" {
			want = w.acct.Images["arm64"][0]
		}
		if aws.ToString(inst.ImageId) != want {
			t.Errorf("instance %s (%s) runs %s, want %s", id, c.Labels[corev1.LabelArchStable], aws.ToString(inst.ImageId), want)
		}
		groups, tokens, ok := w.front.LaunchTemplate(id)
		if !ok || !slices.Equal(groups, []string{w.acct.Group}) || tokens != "required" {
			t.Errorf("instance %s launched with security groups %v and HttpTokens %q, want [%s] and required", id, groups, tokens, w.acct.Group)
		}
		for k, v := range map[string]string{"karpenter.sh/nodepool": c.Labels[karpv1.NodePoolLabelKey], "karpenter.k8s.aws/ec2nodeclass": "default",
			"kubernetes.io/cluster/" + clusterName: "owned", "eks:eks-cluster-name": clusterName, "team": "shop"} {
			if got := tag(inst, k); got != v {
				t.Errorf("instance %s tag %s = %q, want %q", id, k, got, v)
			}
		}
	}
	if len(live) != launched {
		t.Errorf("%d live instances of the cluster, %d launched NodeClaims: %v", len(live), launched, slices.Sorted(maps.Keys(byClaim)))
	}
}

func (w *world) liveInstances(t *testing.T) []ec2types.Instance {
	t.Helper()
	out, err := w.ec2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:kubernetes.io/cluster/" + clusterName), Values: []string{"owned"}},
		{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var live []ec2types.Instance
	for _, r := range out.Reservations {
		live = append(live, r.Instances...)
	}
	return live
}

func tag(inst ec2types.Instance, key string) string {
	for _, t := range inst.Tags {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value)
		}
	}
	return ""
}

// pick returns a launched, registered NodeClaim of pool.
func pick(t *testing.T, pool string) karpv1.NodeClaim {
	t.Helper()
	for _, c := range claims(t) {
		if c.Labels[karpv1.NodePoolLabelKey] == pool && c.Status.NodeName != "" && c.DeletionTimestamp == nil {
			return c
		}
	}
	t.Fatalf("no registered NodeClaim of NodePool %s", pool)
	return karpv1.NodeClaim{}
}

func gone(name string) func() (bool, error) {
	return func() (bool, error) {
		err := kc.Get(context.Background(), client.ObjectKey{Name: name}, &karpv1.NodeClaim{})
		return client.IgnoreNotFound(err) == nil && err != nil, fmt.Errorf("NodeClaim %s still exists (err %v)", name, err)
	}
}

// spotInterruption: a spot interruption warning for a spot node's instance
// replaces its NodeClaim; every pod runs again.
func spotInterruption(t *testing.T, w *world) {
	victim := pick(t, "spot")
	id := strings.TrimPrefix(victim.Status.ProviderID, "aws:///"+victim.Labels[corev1.LabelTopologyZone]+"/")
	body := `{"version":"0","id":"e2e-spot","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","account":"123456789012",` +
		`"time":"2026-11-25T12:00:00Z","region":"us-east-1","resources":[],"detail":{"instance-id":"` + id + `","instance-action":"terminate"}}`
	sent := metav1.Now()
	if _, err := w.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(w.queue), MessageBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
	// Replacement first: when the interrupted node goes, a NodeClaim made
	// after the event must already be initialized.
	replacedFirst, replacements := false, 0
	eventually(t, 4*time.Minute, "the interrupted node "+victim.Status.NodeName+" to go", func() (bool, error) {
		err := kc.Get(context.Background(), client.ObjectKey{Name: victim.Status.NodeName}, &corev1.Node{})
		if client.IgnoreNotFound(err) != nil || err == nil {
			return false, fmt.Errorf("node %s still there (err %v)", victim.Status.NodeName, err)
		}
		for _, c := range claims(t) {
			if c.CreationTimestamp.After(sent.Time) {
				replacements++
				replacedFirst = replacedFirst || meta.IsStatusConditionTrue(c.Status.Conditions, karpv1.ConditionTypeInitialized)
			}
		}
		return true, nil
	})
	t.Logf("%d NodeClaims made after the interruption; one initialized before the node went: %v", replacements, replacedFirst)
	if replacements > 0 && !replacedFirst {
		t.Errorf("node %s of the interrupted instance went before any replacement NodeClaim initialized", victim.Status.NodeName)
	}
	eventually(t, 4*time.Minute, "the interrupted NodeClaim "+victim.Name+" to go", gone(victim.Name))
	waitRunning(t, ns, 100, 4*time.Minute)
	w.checkInstances(t, "")
}

// amiDrift: a new AL2023 release (the SSM parameter names another image)
// drifts the amd64 nodes, which are replaced by nodes of the new image.
func amiDrift(t *testing.T, w *world) {
	newImage := w.acct.Images["x86_64"][1]
	w.front.SetParameter(testaws.AL2023Parameter("x86_64"), newImage)
	eventually(t, 8*time.Minute, "every amd64 NodeClaim on "+newImage, func() (bool, error) {
		var old []string
		for _, c := range claims(t) {
			if c.Labels[corev1.LabelArchStable] == "amd64" && c.Status.ImageID != newImage {
				old = append(old, c.Name)
			}
		}
		return len(old) == 0, fmt.Errorf("on the old image: %v", old)
	})
	waitRunning(t, ns, 100, 4*time.Minute)
	w.checkInstances(t, newImage)
}

// terminatedBehindOurBack: an instance terminated outside nodewright loses
// its NodeClaim to garbage collection, and its pods run elsewhere.
func terminatedBehindOurBack(t *testing.T, w *world) {
	victim := pick(t, "general")
	id := strings.TrimPrefix(victim.Status.ProviderID, "aws:///"+victim.Labels[corev1.LabelTopologyZone]+"/")
	var onVictim corev1.PodList
	if err := kc.List(context.Background(), &onVictim, client.InNamespace(ns), client.MatchingFields{"spec.nodeName": victim.Status.NodeName}); err != nil {
		t.Fatal(err)
	}
	if len(onVictim.Items) == 0 {
		t.Fatalf("no pod runs on %s; the step needs one", victim.Status.NodeName)
	}
	if _, err := w.ec2.TerminateInstances(context.Background(), &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 4*time.Minute, "the NodeClaim "+victim.Name+" of the terminated instance to go", gone(victim.Name))
	eventually(t, 4*time.Minute, "the pods of the lost node to be gone", func() (bool, error) {
		left := 0
		for _, p := range onVictim.Items {
			if kc.Get(context.Background(), client.ObjectKeyFromObject(&p), &corev1.Pod{}) == nil {
				left++
			}
		}
		return left == 0, fmt.Errorf("%d of %d pods of %s still exist", left, len(onVictim.Items), victim.Status.NodeName)
	})
	waitRunning(t, ns, 100, 4*time.Minute)
	w.checkInstances(t, w.acct.Images["x86_64"][1])
}

// killedDuringScaleUp: 200 more pods of one vCPU, in five steps of 40,
// and after each step the controller is SIGKILLed as soon as a NodeClaim
// for it appears, and started again. No NodeClaim gets two instances and no
// instance is left without one.
func killedDuringScaleUp(t *testing.T, w *world) {
	deployment(t, ns, "batch", 0, map[string]string{karpv1.NodePoolLabelKey: "general"}, "1", "1Gi")
	for i := 1; i <= 5; i++ {
		n := len(claims(t))
		scale(t, ns, "batch", int32(40*i))
		eventually(t, 3*time.Minute, "a NodeClaim for step "+fmt.Sprint(i), func() (bool, error) {
			return len(claims(t)) > n, fmt.Errorf("%d NodeClaims", n)
		})
		if err := env.KillController(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := env.StartController(); err != nil {
			t.Fatal(err)
		}
	}
	waitRunning(t, ns, 300, 8*time.Minute)
	// Garbage collection may still be ending instances of claims that
	// never saved their launch; wait for the one-to-one state.
	eventually(t, 2*time.Minute, "moto's instances to match the NodeClaims", func() (bool, error) {
		launched := 0
		for _, c := range claims(t) {
			if c.Status.ProviderID != "" && c.DeletionTimestamp == nil {
				launched++
			}
		}
		live := len(w.liveInstances(t))
		return live == launched, fmt.Errorf("%d live instances, %d launched NodeClaims", live, launched)
	})
	w.checkInstances(t, w.acct.Images["x86_64"][1])
}

package charts

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// karpenterValues is a values file as a Karpenter user on EKS writes one,
// with Karpenter's names, plus Karpenter values nodewright has no
// equivalent for (ignoredKarpenterValues), which NOTES.txt must name.
const karpenterValues = `
settings:
  cloudProvider: aws
  clusterName: prod-eu-west-1
  clusterEndpoint: https://0123456789ABCDEF.gr7.eu-west-1.eks.amazonaws.com
  clusterCABundle: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t
  interruptionQueue: Karpenter-prod-eu-west-1
  isolatedVPC: true
  vmMemoryOverheadPercent: 0.1
  reservedENIs: "1"
  batchMaxDuration: 15s
  batchIdleDuration: 2s
  preferencePolicy: Ignore
  minValuesPolicy: BestEffort
  eksControlPlane: true
  featureGates:
    spotToSpotConsolidation: true
    nodeRepair: false
replicas: 3
logLevel: debug
serviceAccount:
  name: karpenter
  annotations:
    eks.amazonaws.com/role-arn: arn:aws:iam::111122223333:role/KarpenterControllerRole-prod
controller:
  containerName: karpenter-controller
  image:
    repository: 111122223333.dkr.ecr.eu-west-1.amazonaws.com/nodewright
    tag: v0.1.0
    digest: sha256:4c1fcd4ee3f28e06bd0a7b1e1c0e3a7bc1fe7d1e1ed1e7b1d2c0f5ad5bd3b2a1
  env:
    - name: AWS_REGION
      value: eu-west-1
  resources:
    requests:
      cpu: 500m
      memory: 2Gi
    limits:
      cpu: "2"
      memory: 2Gi
  extraArgs:
    - --nodeclaim-workers=128
tolerations:
  - key: dedicated
    operator: Equal
    value: system
    effect: NoSchedule
nodeSelector:
  kubernetes.io/os: linux
priorityClassName: system-node-critical
podAnnotations:
  example.com/scrape: "true"
podLabels:
  team: platform
additionalLabels:
  cost-center: infra
additionalAnnotations:
  example.com/owner: platform
hostNetwork: true
dnsPolicy: ClusterFirstWithHostNet
strategy:
  type: RollingUpdate
  rollingUpdate:
    maxUnavailable: 0
    maxSurge: 1
terminationGracePeriodSeconds: 60
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: DoNotSchedule
affinity:
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          topologyKey: topology.kubernetes.io/zone
podDisruptionBudget:
  name: karpenter
  maxUnavailable: 2
webhook:
  enabled: false
serviceMonitor:
  enabled: true
  additionalLabels:
    release: kube-prometheus-stack
  endpointConfig:
    interval: 30s
`

// The release a Karpenter user would name: its objects are called
// karpenter-nodewright, the ServiceAccount karpenter (from the values).
const (
	karpenterRelease   = "karpenter"
	karpenterNamespace = "karpenter"
)

// karpenterSelector is what the release's pods are selected by.
var karpenterSelector = map[string]string{"app.kubernetes.io/name": "nodewright", instanceLabel: karpenterRelease}

// valueCheck reads one value of karpenterValues back from the objects, as
// rendered or as an API server stored them.
type valueCheck struct {
	name string
	// renderOnly checks need what an API server without prometheus-operator
	// cannot hold (the ServiceMonitor).
	renderOnly bool
	got        func([]client.Object) (any, error)
	want       any
}

func deployment(objs []client.Object) (*appsv1.Deployment, error) {
	return only[*appsv1.Deployment](objs)
}

// fromDeployment reads a field of the Deployment.
func fromDeployment(f func(*appsv1.Deployment) any) func([]client.Object) (any, error) {
	return func(objs []client.Object) (any, error) {
		d, err := deployment(objs)
		if err != nil {
			return nil, err
		}
		return f(d), nil
	}
}

// fromPod reads a field of the Deployment's pod spec.
func fromPod(f func(*corev1.PodSpec) any) func([]client.Object) (any, error) {
	return fromDeployment(func(d *appsv1.Deployment) any { return f(&d.Spec.Template.Spec) })
}

// fromController reads a field of the controller container.
func fromController(f func(*corev1.Container) any) func([]client.Object) (any, error) {
	return fromPod(func(p *corev1.PodSpec) any { return f(&p.Containers[0]) })
}

// onEvery is the value of key in what of every object, as a set: a single
// value when all objects agree.
func onEvery(what func(client.Object) map[string]string, key string) func([]client.Object) (any, error) {
	return func(objs []client.Object) (any, error) {
		seen := map[string]bool{}
		for _, o := range objs {
			seen[what(o)[key]] = true
		}
		return seen, nil
	}
}

func labels(o client.Object) map[string]string      { return o.GetLabels() }
func annotations(o client.Object) map[string]string { return o.GetAnnotations() }

var karpenterChecks = []valueCheck{
	{name: "replicas", got: fromDeployment(func(d *appsv1.Deployment) any { return d.Spec.Replicas }), want: ptr.To[int32](3)},
	{name: "settings as flags", got: fromController(func(c *corev1.Container) any { return c.Args }), want: []string{
		"controller",
		"--namespace=karpenter",
		"--leader-elect=true",
		"--metrics-bind-address=:8080",
		"--health-probe-bind-address=:8081",
		"--log-format=json",
		"--log-level=debug",
		"--cloud-provider=aws",
		"--cluster-name=prod-eu-west-1",
		"--cluster-endpoint=https://0123456789ABCDEF.gr7.eu-west-1.eks.amazonaws.com",
		"--cluster-ca-bundle=LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
		"--interruption-queue=Karpenter-prod-eu-west-1",
		"--vm-memory-overhead-percent=0.1",
		"--reserved-enis=1",
		"--batch-max-duration=15s",
		"--batch-idle-duration=2s",
		"--preference-policy=Ignore",
		"--min-values-policy=BestEffort",
		"--isolated-vpc=true",
		"--spot-to-spot-consolidation=true",
		"--nodeclaim-workers=128",
	}},
	{name: "image", got: fromController(func(c *corev1.Container) any { return c.Image }),
		want: "111122223333.dkr.ecr.eu-west-1.amazonaws.com/nodewright:v0.1.0@sha256:4c1fcd4ee3f28e06bd0a7b1e1c0e3a7bc1fe7d1e1ed1e7b1d2c0f5ad5bd3b2a1"},
	{name: "env", got: fromController(func(c *corev1.Container) any { return c.Env }), want: []corev1.EnvVar{
		{Name: "GOMEMLIMIT", Value: "1200MiB"}, {Name: "AWS_REGION", Value: "eu-west-1"},
	}},
	{name: "resources", got: fromController(func(c *corev1.Container) any { return c.Resources }), want: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("2Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi")},
	}},
	{name: "serviceAccount.name in the pod", got: fromPod(func(p *corev1.PodSpec) any { return p.ServiceAccountName }), want: "karpenter"},
	{name: "serviceAccount.annotations", got: func(objs []client.Object) (any, error) {
		sa, err := only[*corev1.ServiceAccount](objs)
		if err != nil {
			return nil, err
		}
		return []string{sa.Name, sa.Annotations["eks.amazonaws.com/role-arn"]}, nil
	}, want: []string{"karpenter", "arn:aws:iam::111122223333:role/KarpenterControllerRole-prod"}},
	{name: "the bindings name the ServiceAccount", got: func(objs []client.Object) (any, error) {
		var subjects []rbacv1.Subject
		for _, o := range objs {
			switch b := o.(type) {
			case *rbacv1.ClusterRoleBinding:
				subjects = append(subjects, b.Subjects...)
			case *rbacv1.RoleBinding:
				subjects = append(subjects, b.Subjects...)
			}
		}
		return subjects, nil
	}, want: []rbacv1.Subject{
		{Kind: "ServiceAccount", Name: "karpenter", Namespace: karpenterNamespace},
		{Kind: "ServiceAccount", Name: "karpenter", Namespace: karpenterNamespace},
	}},
	{name: "tolerations", got: fromPod(func(p *corev1.PodSpec) any { return p.Tolerations }), want: []corev1.Toleration{
		{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "system", Effect: corev1.TaintEffectNoSchedule},
	}},
	{name: "nodeSelector", got: fromPod(func(p *corev1.PodSpec) any { return p.NodeSelector }), want: map[string]string{"kubernetes.io/os": "linux"}},
	{name: "priorityClassName", got: fromPod(func(p *corev1.PodSpec) any { return p.PriorityClassName }), want: "system-node-critical"},
	{name: "hostNetwork and dnsPolicy", got: fromPod(func(p *corev1.PodSpec) any { return []any{p.HostNetwork, p.DNSPolicy} }),
		want: []any{true, corev1.DNSClusterFirstWithHostNet}},
	{name: "terminationGracePeriodSeconds", got: fromPod(func(p *corev1.PodSpec) any { return p.TerminationGracePeriodSeconds }), want: ptr.To[int64](60)},
	{name: "podAnnotations", got: fromDeployment(func(d *appsv1.Deployment) any { return d.Spec.Template.Annotations }),
		want: map[string]string{"example.com/scrape": "true"}},
	{name: "podLabels beside the selector's", got: fromDeployment(func(d *appsv1.Deployment) any { return d.Spec.Template.Labels }),
		want: map[string]string{"app.kubernetes.io/name": "nodewright", instanceLabel: karpenterRelease, "team": "platform"}},
	{name: "strategy", got: fromDeployment(func(d *appsv1.Deployment) any { return d.Spec.Strategy }), want: appsv1.DeploymentStrategy{
		Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{
			MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromInt32(1)),
		},
	}},
	{name: "topologySpreadConstraints, with the release's selector", got: fromPod(func(p *corev1.PodSpec) any {
		return []any{p.TopologySpreadConstraints[0].WhenUnsatisfiable, p.TopologySpreadConstraints[0].LabelSelector.MatchLabels}
	}), want: []any{corev1.DoNotSchedule, karpenterSelector}},
	{name: "affinity merged with the default, with the release's selector", got: fromPod(func(p *corev1.PodSpec) any {
		anti := p.Affinity.PodAntiAffinity
		return []any{
			p.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Key,
			anti.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchLabels,
			anti.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey,
			anti.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.LabelSelector.MatchLabels,
		}
	}), want: []any{"karpenter.sh/nodepool", karpenterSelector, "topology.kubernetes.io/zone", karpenterSelector}},
	{name: "podDisruptionBudget", got: func(objs []client.Object) (any, error) {
		pdb, err := only[*policyv1.PodDisruptionBudget](objs)
		if err != nil {
			return nil, err
		}
		return []any{pdb.Name, pdb.Spec.MaxUnavailable, pdb.Spec.Selector.MatchLabels}, nil
	}, want: []any{"karpenter", ptr.To(intstr.FromInt32(2)), karpenterSelector}},
	{name: "additionalLabels on every object", got: onEvery(labels, "cost-center"), want: map[string]bool{"infra": true}},
	{name: "additionalAnnotations on every object", got: onEvery(annotations, "example.com/owner"), want: map[string]bool{"platform": true}},
	{name: "serviceMonitor", renderOnly: true, got: func(objs []client.Object) (any, error) {
		sm, err := only[*unstructured.Unstructured](objs)
		if err != nil {
			return nil, err
		}
		ep, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		if len(ep) != 1 {
			return nil, fmt.Errorf("%d endpoints, want 1", len(ep))
		}
		return []any{sm.GetKind(), sm.GetLabels()["release"], ep[0]}, nil
	}, want: []any{"ServiceMonitor", "kube-prometheus-stack", map[string]any{"port": "metrics", "path": "/metrics", "interval": "30s"}}},
}

// ignoredKarpenterValues are the values of karpenterValues NOTES.txt must
// name as having no effect.
var ignoredKarpenterValues = []string{"webhook", "controller.containerName", "settings.eksControlPlane", "settings.featureGates.nodeRepair"}

func notesName(notes string, values []string) error {
	for _, v := range values {
		if !strings.Contains(notes, "  - "+v+"\n") && !strings.HasSuffix(notes, "  - "+v) {
			return fmt.Errorf("NOTES.txt does not name %s:\n%s", v, notes)
		}
	}
	return nil
}

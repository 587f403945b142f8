package simulate

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/manifests"
)

// benchCluster is a NodePool and ten Deployments of 500 pods, of several
// shapes, and a timeline of a day in which every Deployment grows by a
// fifth each even hour and shrinks back each odd hour.
func benchCluster() (*manifests.Set, *Timeline) {
	set := &manifests.Set{
		NodeClasses: []*kwokv1alpha1.KWOKNodeClass{{ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "class"},
			Spec: kwokv1alpha1.KWOKNodeClassSpec{Image: kwokv1alpha1.DefaultImage}}},
		NodePools: []*karpv1.NodePool{{ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "pool"},
			Spec: karpv1.NodePoolSpec{
				Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
					NodeClassRef: &karpv1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass", Name: "default"},
					Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{NodeSelectorRequirement: corev1.NodeSelectorRequirement{
						Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}},
					ExpireAfter: karpv1.MustParseNillableDuration("720h")}},
				Disruption: karpv1.Disruption{ConsolidateAfter: karpv1.MustParseNillableDuration("5m"),
					ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized, Budgets: []karpv1.Budget{{Nodes: "10%"}}},
			}}},
	}
	tl := &Timeline{Duration: Duration{24 * time.Hour}}
	cpus := []string{"250m", "500m", "1", "2", "750m"}
	mems := []string{"512Mi", "1Gi", "2Gi", "4Gi", "1536Mi"}
	for i := 0; i < 10; i++ {
		name := fmt.Sprintf("app-%d", i)
		replicas := int32(500)
		set.Deployments = append(set.Deployments, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("d-" + name)},
			Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse(cpus[i%5]), corev1.ResourceMemory: resource.MustParse(mems[i%5])}}}}}},
			}})
		for _, w := range set.Deployments[len(set.Deployments)-1:] {
			for p := 0; p < int(replicas); p++ {
				set.Pods = append(set.Pods, (manifests.Workload{Kind: "Deployment", Namespace: "default", Name: name, UID: w.UID,
					Template: w.Spec.Template, Selector: w.Spec.Selector, Replicas: replicas}).Pod(p))
			}
		}
		up, down := int32(100), int32(-100)
		tl.Events = append(tl.Events,
			Event{At: &Duration{time.Hour}, Every: &Duration{2 * time.Hour}, Scale: &ScaleAction{Kind: "Deployment", Namespace: "default", Name: name, Delta: &up}},
			Event{At: &Duration{2 * time.Hour}, Every: &Duration{2 * time.Hour}, Scale: &ScaleAction{Kind: "Deployment", Namespace: "default", Name: name, Delta: &down}})
	}
	tl.defaults()
	return set, tl
}

// BenchmarkDay5000Pods simulates a day of a 5,000-pod cluster with hourly
// churn. Run it with -benchtime 1x: one iteration is the whole day.
func BenchmarkDay5000Pods(b *testing.B) {
	for i := 0; i < b.N; i++ {
		set, tl := benchCluster()
		e, err := New(set, Options{Timeline: tl})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		res, err := e.Run(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		wall := time.Since(start)
		b.ReportMetric(tl.Duration.Hours(), "simulated-hours")
		b.ReportMetric(float64(res.Pods.Running+res.Pods.Pending), "pods")
		b.ReportMetric(float64(res.PeakNodes), "peak-nodes")
		b.ReportMetric(wall.Seconds(), "wall-seconds")
		b.ReportMetric(float64(e.rec.solves), "solves")
		b.ReportMetric(float64(e.rec.decides), "decides")
		b.ReportMetric(e.rec.decideTime.Seconds(), "decide-seconds")
		b.ReportMetric(e.rec.solveTime.Seconds(), "solve-seconds")
		if res.Pods.Pending > 0 {
			b.Errorf("%d pods still pending at the end", res.Pods.Pending)
		}
	}
}

package simulate

import (
	"encoding/json"
	"fmt"
	"sort"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/manifests"
)

// apply carries out one occurrence of a timeline event.
func (e *Engine) apply(s scheduled) error {
	ev := s.event
	switch {
	case ev.Scale != nil:
		return e.scale(s, ev.Scale)
	case ev.Jobs != nil:
		e.startJobs(s, ev.Jobs)
	case ev.NodePool != nil:
		return e.patchNodePool(s, ev.NodePool)
	case ev.Image != nil:
		c := e.classes[ev.Image.NodeClass]
		c.Spec.Image = ev.Image.Image
		e.typesStale, e.disruptChanged = true, true
		e.rec.event(s.at, "timeline", fmt.Sprintf("KWOKNodeClass %s: image %s", c.Name, c.Spec.Image))
	}
	return nil
}

// scale sets a workload's pod count: new pods are pending; removed pods
// are the pending ones first, then the newest.
func (e *Engine) scale(s scheduled, a *ScaleAction) error {
	var w manifests.Workload
	for _, x := range e.workloads {
		if x.Kind == a.Kind && x.Namespace == a.Namespace && x.Name == a.Name {
			w = x
		}
	}
	key := workloadKey(w)
	var pods []*corev1.Pod
	for _, p := range e.pods {
		if p.DeletionTimestamp == nil && e.podState[p.UID] != nil && e.podState[p.UID].owner == key {
			pods = append(pods, p)
		}
	}
	want := 0
	if a.Replicas != nil {
		want = int(*a.Replicas)
	} else {
		want = max(len(pods)+int(*a.Delta), 0)
	}
	e.rec.event(s.at, "timeline", fmt.Sprintf("scale %s %s/%s from %d to %d", a.Kind, a.Namespace, a.Name, len(pods), want))
	for len(pods) < want {
		p := w.Pod(e.nextIndex[key])
		e.nextIndex[key]++
		e.addPod(p, key)
		pods = append(pods, p)
	}
	if len(pods) > want {
		// Pending pods go first, then the newest, as a ReplicaSet scales down.
		sort.SliceStable(pods, func(i, j int) bool {
			pi, pj := pods[i].Spec.NodeName == "", pods[j].Spec.NodeName == ""
			if pi != pj {
				return pi
			}
			return pods[i].CreationTimestamp.After(pods[j].CreationTimestamp.Time)
		})
		for _, p := range pods[:len(pods)-want] {
			e.remove(p)
		}
	}
	return nil
}

// startJobs creates the pods of one run of a jobs event: a Job named
// after the event and its occurrence, each pod running for the duration.
func (e *Engine) startJobs(s scheduled, a *JobsAction) {
	name := fmt.Sprintf("%s-%d", a.Name, s.n)
	requests := corev1.ResourceList{}
	if a.CPU != "" {
		requests[corev1.ResourceCPU] = resource.MustParse(a.CPU)
	}
	if a.Memory != "" {
		requests[corev1.ResourceMemory] = resource.MustParse(a.Memory)
	}
	annotations := map[string]string{manifests.DurationAnnotation: a.Duration.String()}
	for k, v := range a.Annotations {
		annotations[k] = v
	}
	labels := map[string]string{"job-name": name}
	for k, v := range a.Labels {
		labels[k] = v
	}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a.Namespace, UID: manifests.UID("Job", a.Namespace, name)}}
	w := manifests.Workload{Kind: "Job", Namespace: a.Namespace, Name: name, UID: job.UID,
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, NodeSelector: a.NodeSelector,
				Containers: []corev1.Container{{Name: "job", Image: "job", Resources: corev1.ResourceRequirements{Requests: requests}}}},
		}}
	for i := 0; i < int(a.Count); i++ {
		e.addPod(w.Pod(i), "")
	}
	e.rec.event(s.at, "timeline", fmt.Sprintf("job %s/%s: %d pods for %s", a.Namespace, name, a.Count, a.Duration))
}

// patchNodePool applies a JSON merge patch to a NodePool.
func (e *Engine) patchNodePool(s scheduled, a *NodePoolAction) error {
	for i, np := range e.pools {
		if np.Name != a.Name {
			continue
		}
		doc, err := json.Marshal(np)
		if err != nil {
			return fmt.Errorf("timeline %s: encoding NodePool %s: %w", s.event.label(s.index), np.Name, err)
		}
		var obj any
		if err := json.Unmarshal(doc, &obj); err != nil {
			return fmt.Errorf("timeline %s: encoding NodePool %s: %w", s.event.label(s.index), np.Name, err)
		}
		patched, err := json.Marshal(mergePatch(obj, map[string]any(a.Patch)))
		if err != nil {
			return fmt.Errorf("timeline %s: patching NodePool %s: %w", s.event.label(s.index), np.Name, err)
		}
		out := &karpv1.NodePool{}
		if err := json.Unmarshal(patched, out); err != nil {
			return fmt.Errorf("timeline %s: nodePool.patch: the patched NodePool %s is not valid: %v; fix the patch", s.event.label(s.index), np.Name, err)
		}
		e.pools[i] = out
		e.typesStale, e.provisionChanged, e.disruptChanged = true, true, true
		e.rec.event(s.at, "timeline", fmt.Sprintf("NodePool %s patched", np.Name))
		return nil
	}
	return fmt.Errorf("timeline %s: nodePool: NodePool %s is not in the manifests", s.event.label(s.index), a.Name)
}

// mergePatch applies an RFC 7386 JSON merge patch: objects merge key by
// key, null deletes, anything else replaces.
func mergePatch(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, ok := target.(map[string]any)
	if !ok {
		tm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(tm, k)
			continue
		}
		tm[k] = mergePatch(tm[k], v)
	}
	return tm
}

package testkube

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Eventually polls cond every half second until it holds, failing the test
// with cond's last error once timeout has passed.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last: %v", timeout, what, last)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// PodCounts counts a namespace's pods that are Running on a node, and the
// rest; pods being deleted are not counted.
func PodCounts(c client.Client, ns string) (running, other int, err error) {
	var pods corev1.PodList
	if err := c.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
		return 0, 0, err
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning {
			running++
		} else {
			other++
		}
	}
	return running, other, nil
}

// WaitRunning waits until exactly want pods of ns are Running and none is
// not.
func WaitRunning(t testing.TB, c client.Client, ns string, want int, timeout time.Duration) {
	t.Helper()
	Eventually(t, timeout, fmt.Sprintf("%d pods Running in %s", want, ns), func() (bool, error) {
		running, other, err := PodCounts(c, ns)
		return err == nil && running == want && other == 0, fmt.Errorf("%d running, %d not (err %v)", running, other, err)
	})
}

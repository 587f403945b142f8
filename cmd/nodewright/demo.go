package main

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/devcluster"
	"github.com/nodewright/nodewright/internal/devenv"
	"github.com/nodewright/nodewright/internal/operator"
)

var (
	//go:embed demo/nodepool.yaml
	demoNodePool []byte
	//go:embed demo/deployment.yaml
	demoDeployment []byte
)

const demoReplicas = 30

// runDemo shows the autoscaler at work: a Deployment scales up, nodes come,
// it scales down, they go.
func runDemo(cmd *cobra.Command, controllerArgs []string) (err error) {
	ctx := cmd.Context()
	env, err := devUp(cmd.Context(), devcluster.Options{Name: devClusterName}, append([]string{"--log-level=info"}, controllerArgs...))
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("\ntearing down the local cluster...")
		if derr := env.Down(context.Background()); derr != nil && err == nil {
			err = derr
		}
		if err != nil {
			fmt.Println("controller logs were at", env.ControllerLog())
		}
	}()
	c, err := client.New(env.Config, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		return err
	}
	for _, doc := range [][]byte{demoNodePool, demoDeployment} {
		if err := devenv.Apply(ctx, c, doc); err != nil {
			return err
		}
	}
	fmt.Println("\napplied a KWOKNodeClass, a NodePool (amd64, on-demand or spot, empty nodes go after 10s) and Deployment inflate (1 vCPU, 1.5Gi per pod, spread over zones)")

	w := &watcher{c: c}
	fmt.Printf("\n== scaling inflate to %d replicas\n", demoReplicas)
	if err := scale(ctx, c, demoReplicas); err != nil {
		return err
	}
	if err := w.until(ctx, 5*time.Minute, func(s state) bool { return s.running == demoReplicas && s.pending == 0 }); err != nil {
		return fmt.Errorf("waiting for %d running pods: %w", demoReplicas, err)
	}
	if err := printNodePools(ctx, env.Config); err != nil {
		return err
	}
	fmt.Println("\n== scaling inflate to 0 replicas")
	if err := scale(ctx, c, 0); err != nil {
		return err
	}
	if err := w.until(ctx, 5*time.Minute, func(s state) bool { return s.running == 0 && len(s.claims) == 0 && s.nodes == 0 }); err != nil {
		return fmt.Errorf("waiting for the nodes to go: %w", err)
	}
	fmt.Println("\ndemo done: nodes came for the pods and went when they left")
	return nil
}

func scale(ctx context.Context, c client.Client, replicas int32) error {
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "inflate"}, d); err != nil {
		return err
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = &replicas
	return c.Patch(ctx, d, patch)
}

type state struct {
	pending, running int
	claims           []string
	nodes            int
}

func (s state) String() string {
	return fmt.Sprintf("pods: %d pending, %d running | nodes: %d | nodeclaims: %d", s.pending, s.running, s.nodes, len(s.claims))
}

type watcher struct {
	c    client.Client
	last string
	t0   time.Time
}

// until prints the cluster whenever it changes, until done holds.
func (w *watcher) until(ctx context.Context, timeout time.Duration, done func(state) bool) error {
	if w.t0.IsZero() {
		w.t0 = time.Now()
	}
	deadline := time.Now().Add(timeout)
	for {
		s, err := w.observe(ctx)
		if err != nil {
			return err
		}
		text := s.String() + "\n" + strings.Join(s.claims, "\n")
		if text != w.last {
			w.last = text
			fmt.Printf("[%5.1fs] %s\n", time.Since(w.t0).Seconds(), s)
			for _, line := range s.claims {
				fmt.Println("          ", line)
			}
		}
		if done(s) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not done after %s; last seen: %s", timeout, s)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func (w *watcher) observe(ctx context.Context) (state, error) {
	var s state
	var pods corev1.PodList
	if err := w.c.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels{"app": "inflate"}); err != nil {
		return s, err
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Status.Phase == corev1.PodRunning {
			s.running++
		} else {
			s.pending++
		}
	}
	var nodes corev1.NodeList
	if err := w.c.List(ctx, &nodes); err != nil {
		return s, err
	}
	s.nodes = len(nodes.Items)
	var claims karpv1.NodeClaimList
	if err := w.c.List(ctx, &claims); err != nil {
		return s, err
	}
	for _, nc := range claims.Items {
		st := "created"
		for _, t := range []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized} {
			if meta.IsStatusConditionTrue(nc.Status.Conditions, t) {
				st = strings.ToLower(t)
			}
		}
		if nc.DeletionTimestamp != nil {
			st = "deleting"
		}
		s.claims = append(s.claims, fmt.Sprintf("nodeclaim %-16s %-12s %-7s %-9s %s", nc.Name, nc.Labels[corev1.LabelInstanceTypeStable],
			nc.Labels[corev1.LabelTopologyZone], nc.Labels[karpv1.CapacityTypeLabelKey], st))
	}
	sort.Strings(s.claims)
	return s, nil
}

// printNodePools shows `kubectl get nodepools -o wide` once the NodePool
// status controller has caught up with the nodes (every column filled).
func printNodePools(ctx context.Context, cfg *rest.Config) error {
	deadline := time.Now().Add(time.Minute)
	for {
		t, err := getTable(ctx, cfg, karpv1.Group, karpv1.SchemeGroupVersion.Version, "nodepools")
		if err != nil {
			return err
		}
		if len(emptyCells(t)) == 0 || time.Now().After(deadline) {
			fmt.Println("\n$ kubectl get nodepools -o wide")
			writeTable(os.Stdout, t)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

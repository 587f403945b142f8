package operator

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// An API server gone for longer than the lease makes the controller lose
// it. The process does not exit: it reports not ready while the server is
// away, begins a new term that takes the lease again once the server is
// back, is ready again, and that term provisions.
func TestReadinessAndReelectionAcrossAPIServerOutage(t *testing.T) {
	const pool, ns = "reelect", "reelect"
	target, err := url.Parse(cluster.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, target.Host)
	probeAddr := freeAddr(t)
	o := DefaultOptions()
	cfg := rest.CopyConfig(cluster.Config)
	cfg.Host = "https://" + p.addr
	o.Config = cfg
	o.Namespace = ns
	o.LeaderElect = true
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 4*time.Second, 3*time.Second, 500*time.Millisecond
	o.MetricsAddr, o.ProbeAddr = "0", probeAddr
	o.Provisioning.BatchIdle, o.Provisioning.BatchMax = 200*time.Millisecond, 2*time.Second
	o.Provisioning.Resync = time.Second
	o.GCInterval = time.Second
	o.Disruption.Interval = time.Second
	o.SkipControllerNameValidation = true
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("controller stopped with error: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("controller did not stop within 30s")
		}
	})
	running := func() error {
		select {
		case err := <-done:
			done <- err
			return fmt.Errorf("Run returned: %v", err)
		default:
			return nil
		}
	}
	readyz := func() (int, error) {
		c := http.Client{Timeout: 3 * time.Second}
		resp, err := c.Get("http://" + probeAddr + "/readyz")
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	holder := func() (string, error) {
		var l coordinationv1.Lease
		if err := cluster.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "nodewright-leader"}, &l); err != nil {
			return "", err
		}
		if l.Spec.HolderIdentity == nil {
			return "", nil
		}
		return *l.Spec.HolderIdentity, nil
	}

	var first string
	eventually(t, 60*time.Second, "the controller leads and is ready", func() (bool, error) {
		if err := running(); err != nil {
			t.Fatal(err)
		}
		h, err := holder()
		first = h
		code, rerr := readyz()
		return err == nil && h != "" && rerr == nil && code == http.StatusOK, fmt.Errorf("holder %q (%v), readyz %d (%v)", h, err, code, rerr)
	})

	p.stop()
	outage := time.Now()
	eventually(t, 10*time.Second, "readyz fails with the API server away", func() (bool, error) {
		code, err := readyz()
		return err == nil && code != http.StatusOK, fmt.Errorf("readyz %d (%v)", code, err)
	})
	t.Logf("not ready %v after the API server went away", time.Since(outage).Round(time.Millisecond))
	// Longer than the lease: the term must have lost it.
	for time.Since(outage) < 2*o.LeaseDuration {
		if err := running(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	p.start(t)
	back := time.Now()
	eventually(t, 60*time.Second, "a new term takes the lease and is ready", func() (bool, error) {
		if err := running(); err != nil {
			t.Fatal(err)
		}
		h, err := holder()
		code, rerr := readyz()
		return err == nil && h != "" && h != first && rerr == nil && code == http.StatusOK, fmt.Errorf("holder %q (first %q, %v), readyz %d (%v)", h, first, err, code, rerr)
	})
	t.Logf("leading and ready again %v after the API server came back", time.Since(back).Round(time.Millisecond))

	setup(t, pool, nil)
	pendingPods(t, pool, 2, "100m")
	eventually(t, 30*time.Second, "the new term provisions", func() (bool, error) {
		cs, err := claimsOf(pool)
		return err == nil && len(cs) >= 1, err
	})
	if err := running(); err != nil {
		t.Fatal(err)
	}
}

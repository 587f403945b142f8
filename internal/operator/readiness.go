package operator

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

const (
	// apiServerCheckTimeout stays under the kubelet's default probe timeout
	// of one second, so that a slow API server fails the check rather than
	// the probe request.
	apiServerCheckTimeout = 800 * time.Millisecond
	// apiServerCheckMaxAge spares the API server a request for every probe
	// when several probe at once (kubelet, a load balancer, a person).
	apiServerCheckMaxAge = 2 * time.Second
)

// apiServerCheck is a readyz check that fails while the controller cannot
// reach the API server. The informer caches stay synced through an outage
// (they keep what they had), so the "cache" check alone would report ready
// while nothing the controller decides can be written.
type apiServerCheck struct {
	client  rest.Interface
	timeout time.Duration
	maxAge  time.Duration
	now     func() time.Time

	// mu is held across the request, so that probes arriving together
	// share one request.
	mu  sync.Mutex
	at  time.Time
	err error
}

// newAPIServerCheck pings the API server cfg points at, with its own rate
// limiter so that a busy controller does not delay the answer.
func newAPIServerCheck(cfg *rest.Config, timeout, maxAge time.Duration) (*apiServerCheck, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.RateLimiter = nil
	cfg.QPS, cfg.Burst = 5, 10
	cfg.Timeout = timeout
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the API server readiness check: %w", err)
	}
	return &apiServerCheck{client: dc.RESTClient(), timeout: timeout, maxAge: maxAge, now: time.Now}, nil
}

// Check asks the API server's /readyz, or returns the answer of a request
// made less than maxAge ago. A server that answers but is not ready (its
// etcd gone, say) fails the check too: it cannot store what the controller
// writes.
func (c *apiServerCheck) Check(*http.Request) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && c.now().Sub(c.at) < c.maxAge {
		return c.err
	}
	// Not the probe request's context: the answer is shared with the
	// probes that come after it.
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	_, err := c.client.Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		err = fmt.Errorf("API server not reachable or not ready: %w", err)
	}
	c.at, c.err = c.now(), err
	return err
}

package operator

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// A NodeClaim create that the API server stores but whose response never
// reaches the controller (a timeout, a dropped connection) must not lead to
// a second NodeClaim for the same pods: the controller chose the name, so
// it waits for that NodeClaim instead of planning the pods again.
func TestLostCreateResponseLaunchesNoSecondNodeClaim(t *testing.T) {
	const pool = "lost-create"
	setup(t, pool, nil)
	var dropped atomic.Int32
	var droppedAt atomic.Int64
	stop := startController(t, func(o *Options) {
		cfg := rest.CopyConfig(cluster.Config)
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				resp, err := rt.RoundTrip(r)
				if err != nil {
					return resp, err
				}
				if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/nodeclaims") && dropped.CompareAndSwap(0, 1) {
					// The server stored it; the answer is lost on the way back.
					droppedAt.Store(time.Now().UnixNano())
					resp.Body.Close()
					return nil, errors.New("test: response lost after the server stored the NodeClaim")
				}
				if r.URL.Query().Get("watch") == "true" && strings.HasSuffix(r.URL.Path, "/nodeclaims") {
					// A busy API server: the cache learns of the stored
					// NodeClaim only seconds later, while provisioning loops
					// run on.
					resp.Body = &lagging{ReadCloser: resp.Body, since: &droppedAt, lag: 5 * time.Second}
				}
				return resp, nil
			})
		}
		o.Config = cfg
	})
	defer stop()
	pendingPods(t, pool, 3, "100m")

	eventually(t, 30*time.Second, "the first create's response dropped and its NodeClaim stored", func() (bool, error) {
		cs, err := claimsOf(pool)
		return dropped.Load() == 1 && len(cs) >= 1, err
	})
	// Several provisioning loops (a batch closes within 2s, resync every
	// 1s) run while the cache lags; none may plan the pods onto another
	// claim.
	consistently(t, 10*time.Second, "one NodeClaim for the 3 pods", func() (bool, error) {
		cs, err := claimsOf(pool)
		return err == nil && len(cs) == 1, err
	})
}

// lagging holds back a watch stream's data for lag after the instant in
// since (once set).
type lagging struct {
	io.ReadCloser
	since *atomic.Int64
	lag   time.Duration
}

func (l *lagging) Read(p []byte) (int, error) {
	n, err := l.ReadCloser.Read(p)
	if at := l.since.Load(); at != 0 {
		if wait := time.Until(time.Unix(0, at).Add(l.lag)); wait > 0 {
			time.Sleep(wait)
		}
	}
	return n, err
}

package operator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

const (
	// termStopGrace bounds the wait for a term's runnables to return after
	// it lost the lease. Their context is cancelled at once, so every API
	// write and cloud call they make fails from then on; a runnable still
	// running after this long ignores that, and the process exits rather
	// than run a second term beside it.
	termStopGrace = 30 * time.Second
	// maxRetryWait caps the wait between attempts to set a new term up
	// while the API server is still away.
	maxRetryWait = 5 * time.Second
	// cacheCheckTimeout and apiServerCheckTimeout together stay under the
	// kubelet's default probe timeout of one second.
	cacheCheckTimeout = 150 * time.Millisecond
)

// Run runs the controller until ctx ends.
//
// The controller runs in terms. A term is what a process lifetime used to
// be: a controller-runtime manager with every controller, informer cache
// and in-memory state built anew, campaigning for the lease and acting
// once elected. A term ends when the lease is lost, which happens whenever
// the API server is unreachable for longer than the renew deadline (an
// outage, a partition). Karpenter's process exits then and the kubelet
// restarts it; this process instead waits for everything the term started
// to return and then begins a new term, which campaigns again. It is the
// same as a restart, without needing anyone to restart it.
//
// Two leaders never act at once: controller-runtime cancels a term's
// context the moment it learns the lease is lost, which is before the lease
// can have expired for anyone else (the renew deadline is shorter than the
// lease), and every write and cloud call of the term carries that context.
// The next term starts only after every runnable of the last one returned;
// if one does not within termStopGrace, Run fails and the process exits as
// before. The new term takes the lease only once it has expired, as any
// other candidate would.
//
// The probes and metrics are served for the life of the process, not of a
// term, so that the kubelet sees a live process that is not ready while no
// term leads or reaches the API server, rather than a dead one.
func Run(ctx context.Context, opts Options) error {
	logger := log.FromContext(ctx)
	cfg := opts.Config
	if cfg == nil {
		var err error
		if cfg, err = RESTConfig(opts.Kubeconfig); err != nil {
			return err
		}
	}
	ready, err := newAPIServerCheck(cfg, apiServerCheckTimeout, apiServerCheckMaxAge)
	if err != nil {
		return err
	}
	p := &processServers{apiServer: ready}
	if err := p.start(ctx, cfg, opts); err != nil {
		return err
	}
	defer p.stop()
	logger.Info("serving for the life of the process; terms serve neither", "probes", opts.ProbeAddr, "metrics", opts.MetricsAddr)
	// The terms serve nothing themselves.
	termOpts := opts
	termOpts.Config = cfg
	termOpts.ProbeAddr, termOpts.MetricsAddr = "0", "0"

	wait := time.Second
	for n := 1; ; n++ {
		t := &term{}
		p.setTerm(t)
		tctx, cancel := context.WithCancel(ctx)
		err := runTerm(tctx, termOpts, t)
		cancel()
		p.setTerm(nil)
		if ctx.Err() != nil {
			return err
		}
		switch {
		case n > 1 && !t.started:
			// The options worked for the first term; what fails now is the
			// cluster (the API server still away), so try again.
			logger.Error(err, "setting up a new term; trying again", "term", n, "retryIn", wait)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
			wait = min(2*wait, maxRetryWait)
			n--
			continue
		case !opts.LeaderElect || !lostLease(err):
			return err
		}
		wait = time.Second
		logger.Info("lost the leader lease; waiting for the term to stop before campaigning again", "term", n)
		if err := t.waitStopped(termStopGrace); err != nil {
			return fmt.Errorf("term %d lost the lease: %w", n, err)
		}
		// controller-runtime refuses a second controller of the same name in
		// a process; the names are the same as in the first term, which
		// checked them.
		termOpts.SkipControllerNameValidation = true
	}
}

// lostLease tells controller-runtime's error for a lost lease, which it does
// not export.
func lostLease(err error) bool {
	return err != nil && strings.Contains(err.Error(), "leader election lost")
}

// term tracks the runnables of one manager, so that the next term starts
// only once they all returned: controller-runtime, on a lost lease, returns
// without waiting for them.
type term struct {
	mu      sync.Mutex
	started bool
	running int
	cache   cache.Cache
}

// track returns mgr with every runnable added to it tracked.
func (t *term) track(mgr manager.Manager) manager.Manager {
	t.mu.Lock()
	t.cache = mgr.GetCache()
	t.mu.Unlock()
	return &trackingManager{Manager: mgr, term: t}
}

func (t *term) enter() {
	t.mu.Lock()
	t.running++
	t.mu.Unlock()
}

func (t *term) leave() {
	t.mu.Lock()
	t.running--
	t.mu.Unlock()
}

// waitStopped waits until every tracked runnable has returned.
func (t *term) waitStopped(grace time.Duration) error {
	deadline := time.Now().Add(grace)
	for {
		t.mu.Lock()
		n := t.running
		t.mu.Unlock()
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d runnables still running %v after their context was cancelled", n, grace)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cacheSynced is the readyz check of the term's informer caches.
func (t *term) cacheSynced(req *http.Request) error {
	if t == nil {
		return errors.New("no term running: rejoining the leader election")
	}
	t.mu.Lock()
	c := t.cache
	t.mu.Unlock()
	// An informer made during an outage (a controller reading a type for the
	// first time) never syncs until the server is back; the probe must
	// answer within the kubelet's timeout all the same.
	ctx, cancel := context.WithTimeout(req.Context(), cacheCheckTimeout)
	defer cancel()
	if c == nil || !c.WaitForCacheSync(ctx) {
		return errors.New("informer caches not synced")
	}
	return nil
}

type trackingManager struct {
	manager.Manager
	term *term
}

func (m *trackingManager) Start(ctx context.Context) error {
	m.term.mu.Lock()
	m.term.started = true
	m.term.mu.Unlock()
	return m.Manager.Start(ctx)
}

// Add tracks r. Caches and webhook servers, which controller-runtime sorts
// by type, go in as they are; they stop with the manager's own cache.
func (m *trackingManager) Add(r manager.Runnable) error {
	switch r.(type) {
	case interface{ GetCache() cache.Cache }, webhook.Server:
		return m.Manager.Add(r)
	}
	leader := true
	if l, ok := r.(manager.LeaderElectionRunnable); ok {
		leader = l.NeedLeaderElection()
	}
	tr := tracked{Runnable: r, term: m.term, leader: leader}
	if w, ok := r.(interface{ Warmup(context.Context) error }); ok {
		return m.Manager.Add(trackedWarmup{tracked: tr, warmup: w.Warmup})
	}
	return m.Manager.Add(tr)
}

type tracked struct {
	manager.Runnable
	term   *term
	leader bool
}

func (r tracked) NeedLeaderElection() bool { return r.leader }

func (r tracked) Start(ctx context.Context) error {
	r.term.enter()
	defer r.term.leave()
	return r.Runnable.Start(ctx)
}

// trackedWarmup keeps controller-runtime's optional warm-up of a runnable
// before it is elected.
type trackedWarmup struct {
	tracked
	warmup func(context.Context) error
}

func (r trackedWarmup) Warmup(ctx context.Context) error { return r.warmup(ctx) }

// processServers are the probe and metrics servers of the process.
type processServers struct {
	apiServer *apiServerCheck

	mu      sync.Mutex
	current *term
	probes  *http.Server
	stopped chan struct{}
}

func (p *processServers) setTerm(t *term) {
	p.mu.Lock()
	p.current = t
	p.mu.Unlock()
}

func (p *processServers) cacheSynced(req *http.Request) error {
	p.mu.Lock()
	t := p.current
	p.mu.Unlock()
	return t.cacheSynced(req)
}

// start serves the probes (unless ProbeAddr is "0") and the metrics
// (unless MetricsAddr is "0") until ctx ends or stop is called.
func (p *processServers) start(ctx context.Context, cfg *rest.Config, opts Options) error {
	if opts.MetricsAddr != "0" && opts.MetricsAddr != "" {
		srv, err := metricsserver.NewServer(metricsserver.Options{BindAddress: opts.MetricsAddr}, cfg, http.DefaultClient)
		if err != nil {
			return fmt.Errorf("creating the metrics server: %w", err)
		}
		go func() {
			if err := srv.Start(ctx); err != nil {
				log.FromContext(ctx).Error(err, "metrics server stopped")
			}
		}()
	}
	if opts.ProbeAddr == "0" || opts.ProbeAddr == "" {
		return nil
	}
	l, err := net.Listen("tcp", opts.ProbeAddr)
	if err != nil {
		return fmt.Errorf("serving probes on %s: %w", opts.ProbeAddr, err)
	}
	mux := http.NewServeMux()
	ready := &healthz.Handler{Checks: map[string]healthz.Checker{"apiserver": p.apiServer.Check, "cache": p.cacheSynced}}
	alive := &healthz.Handler{Checks: map[string]healthz.Checker{"ping": healthz.Ping}}
	// As controller-runtime serves them: /readyz/<check> asks one check.
	mux.Handle("/readyz", http.StripPrefix("/readyz", ready))
	mux.Handle("/readyz/", http.StripPrefix("/readyz", ready))
	mux.Handle("/healthz", http.StripPrefix("/healthz", alive))
	mux.Handle("/healthz/", http.StripPrefix("/healthz", alive))
	p.probes = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	p.stopped = make(chan struct{})
	go func() {
		defer close(p.stopped)
		_ = p.probes.Serve(l)
	}()
	return nil
}

func (p *processServers) stop() {
	if p.probes == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = p.probes.Shutdown(ctx)
	<-p.stopped
}

package operator

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/nodewright/nodewright/internal/learned"
)

// reloadOnElection returns the manager the controllers are set up with:
// every runnable added to it that acts as leader starts only once this
// replica, elected, has read the learned capacities again. A standby read
// them when it started, perhaps hours before it won the lease, and the
// leader it replaces may have learned since; without the reload it would
// plan with the catalog's estimates what the cluster already knows better.
// controller-runtime starts elected runnables together, so the reload is a
// gate they wait on, not a runnable started first.
func reloadOnElection(mgr manager.Manager, store *learned.Store, r client.Reader) (manager.Manager, error) {
	g := &reload{store: store, reader: r, done: make(chan struct{})}
	if err := mgr.Add(g); err != nil {
		return nil, err
	}
	return &electedManager{Manager: mgr, reload: g}, nil
}

type electedManager struct {
	manager.Manager
	reload *reload
}

// Add holds back the runnables that act as leader until the reload is done.
func (m *electedManager) Add(r manager.Runnable) error {
	if !actsAsLeader(r) {
		return m.Manager.Add(r)
	}
	g := gated{Runnable: r, reload: m.reload}
	if w, ok := r.(warmup); ok {
		return m.Manager.Add(gatedWarmup{gated: g, warmup: w})
	}
	return m.Manager.Add(g)
}

// actsAsLeader tells the runnables controller-runtime starts only once
// elected, as manager.runnables.Add sorts them.
func actsAsLeader(r manager.Runnable) bool {
	switch r := r.(type) {
	case interface{ GetCache() cache.Cache }, webhook.Server:
		return false
	case manager.LeaderElectionRunnable:
		return r.NeedLeaderElection()
	default:
		return true
	}
}

// reload reads the learned capacities once elected, trying again until it
// succeeds or the replica stops.
type reload struct {
	store  *learned.Store
	reader client.Reader
	done   chan struct{}
}

func (g *reload) NeedLeaderElection() bool { return true }

func (g *reload) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("learned")
	wait := time.Second
	for {
		err := g.store.Load(ctx, g.reader)
		if err == nil {
			logger.Info("elected: learned capacities read again", "instanceTypes", len(g.store.Names()))
			close(g.done)
			return nil
		}
		logger.Error(err, "elected: reading learned capacities again; planning waits", "retryIn", wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// gated starts its runnable once the reload is done.
type gated struct {
	manager.Runnable
	reload *reload
}

func (g gated) NeedLeaderElection() bool { return true }

func (g gated) Start(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-g.reload.done:
	}
	return g.Runnable.Start(ctx)
}

// warmup is controller-runtime's optional warm-up of a controller before it
// is elected; a gated controller keeps it.
type warmup interface {
	Warmup(context.Context) error
}

type gatedWarmup struct {
	gated
	warmup warmup
}

func (g gatedWarmup) Warmup(ctx context.Context) error { return g.warmup.Warmup(ctx) }

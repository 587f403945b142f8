package aws

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
)

// DefaultRefreshInterval is how often instance types, offerings and prices
// are read again from AWS.
const DefaultRefreshInterval = time.Hour

// Refresher keeps the provider's catalog current: at start and on a timer
// it asks EC2 for the region's instance types and offerings and prices
// them. While discovery fails the last catalog stays (at first the built-in
// one), and the failure is logged once until it recovers.
type Refresher struct {
	Provider *Provider
	EC2      EC2
	Region   string
	// Prices returns the prices to use now; nil is BuiltinPrices.
	Prices   func(context.Context) Prices
	Interval time.Duration
}

// Start refreshes until ctx ends. It needs no leader: every replica keeps
// its own catalog warm.
func (r *Refresher) Start(ctx context.Context) error {
	interval := r.Interval
	if interval <= 0 {
		interval = DefaultRefreshInterval
	}
	failing := false
	for {
		if err := r.refresh(ctx); err != nil && !failing {
			failing = true
			log.FromContext(ctx).Error(err, "discovering instance types from EC2 failed; keeping the catalog in use", "types", len(r.Provider.Catalog().InstanceTypes))
		} else if err == nil {
			failing = false
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// NeedLeaderElection is false: discovery only reads.
func (r *Refresher) NeedLeaderElection() bool { return false }

func (r *Refresher) refresh(ctx context.Context) error {
	prices := BuiltinPrices()
	if r.Prices != nil {
		prices = r.Prices(ctx)
	}
	c, err := Discover(ctx, r.EC2, r.Region, prices)
	if err != nil {
		return err
	}
	r.Provider.SetCatalog(c)
	log.FromContext(ctx).Info("discovered instance types", "region", r.Region, "types", len(c.InstanceTypes), "prices", prices.Source)
	return nil
}

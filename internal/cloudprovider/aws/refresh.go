package aws

import (
	"context"
	"sync"
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
	// Spot reads the spot price history; nil keeps the spot price model.
	Spot EC2SpotPrices
	// Pricing reads on-demand prices; nil (--isolated-vpc) uses the
	// built-in ones.
	Pricing  Pricing
	Region   string
	Interval time.Duration

	mu        sync.Mutex
	livePrice bool
	priceNote string
	warned    bool
}

// PriceStatus says whether on-demand prices come from the Pricing API, and
// where they come from; EC2NodeClass status shows it.
func (r *Refresher) PriceStatus() (live bool, note string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.livePrice, r.priceNote
}

// prices are the Pricing API's, or the built-in ones when it cannot be
// reached, which is logged once until it can again.
func (r *Refresher) prices(ctx context.Context) Prices {
	var err error
	if r.Pricing != nil {
		var p Prices
		if p, err = PricingAPIPrices(ctx, r.Pricing, r.Region); err == nil {
			r.setPriceStatus(ctx, true, "on-demand prices from "+p.Source, nil)
			return p
		}
	}
	b := BuiltinPrices()
	note := "on-demand prices are the built-in table (" + b.Source + ")"
	if r.Pricing == nil {
		note += ": --isolated-vpc is set"
	} else {
		note += ": the Pricing API could not be reached: " + err.Error()
	}
	r.setPriceStatus(ctx, false, note, err)
	return b
}

func (r *Refresher) setPriceStatus(ctx context.Context, live bool, note string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !live && r.Pricing != nil && !r.warned {
		log.FromContext(ctx).Error(err, "using the built-in on-demand prices until the Pricing API answers")
		r.warned = true
	}
	if live {
		r.warned = false
	}
	r.livePrice, r.priceNote = live, note
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
		if err := r.Refresh(ctx); err != nil && !failing {
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

// Refresh discovers once: prices, instance types and offerings, spot prices.
func (r *Refresher) Refresh(ctx context.Context) error {
	prices := r.prices(ctx)
	c, err := Discover(ctx, r.EC2, r.Region, prices)
	if err != nil {
		return err
	}
	if r.Spot != nil {
		if err := ApplySpotPrices(ctx, r.Spot, c); err != nil {
			log.FromContext(ctx).Error(err, "keeping the spot price model")
		}
	}
	r.Provider.SetCatalog(c)
	log.FromContext(ctx).Info("discovered instance types", "region", r.Region, "types", len(c.InstanceTypes), "prices", prices.Source, "spotPrices", c.SpotPriceModel)
	return nil
}

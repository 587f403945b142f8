package instancetype

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	karpv1alpha1 "github.com/nodewright/nodewright/api/karpenter/v1alpha1"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Overlay is a NodeOverlay ready to apply.
type Overlay struct {
	Name         string
	Weight       int32
	Requirements scheduling.Requirements
	// Price replaces the price of matching offerings.
	Price *float64
	// Adjustment changes the price of matching offerings.
	Adjustment *PriceAdjustment
	Capacity   corev1.ResourceList
}

// PriceAdjustment is "+0.5", "-0.5", "+10%" or "-15%".
type PriceAdjustment struct {
	Amount  float64
	Percent bool
}

// Apply returns the adjusted price, never below zero.
func (a PriceAdjustment) Apply(price float64) float64 {
	p := price + a.Amount
	if a.Percent {
		p = price * (1 + a.Amount/100)
	}
	if p < 0 {
		return 0
	}
	return p
}

// CompileOverlay checks a NodeOverlay and prepares it. The API server already
// refuses most bad input; this catches what reached us anyway (objects from
// files in the simulator, older CRDs) with an error naming the field.
func CompileOverlay(o *karpv1alpha1.NodeOverlay) (Overlay, error) {
	out := Overlay{Name: o.Name, Capacity: o.Spec.Capacity}
	if o.Spec.Weight != nil {
		out.Weight = *o.Spec.Weight
	}
	out.Requirements = scheduling.FromNodeSelectorRequirements(o.Spec.Requirements...)
	if o.Spec.Price != nil && o.Spec.PriceAdjustment != nil {
		return out, fmt.Errorf("NodeOverlay %s: spec.price and spec.priceAdjustment cannot both be set; keep one", o.Name)
	}
	if o.Spec.Price != nil {
		p, err := strconv.ParseFloat(*o.Spec.Price, 64)
		if err != nil || p < 0 {
			return out, fmt.Errorf("NodeOverlay %s: spec.price %q must be a non-negative number such as \"0.25\"", o.Name, *o.Spec.Price)
		}
		out.Price = &p
	}
	if o.Spec.PriceAdjustment != nil {
		a, err := ParsePriceAdjustment(*o.Spec.PriceAdjustment)
		if err != nil {
			return out, fmt.Errorf("NodeOverlay %s: spec.priceAdjustment: %w", o.Name, err)
		}
		out.Adjustment = &a
	}
	if _, ok := o.Spec.Capacity[corev1.ResourceEphemeralStorage]; ok {
		return out, fmt.Errorf("NodeOverlay %s: spec.capacity may not set ephemeral-storage; remove it", o.Name)
	}
	for _, name := range slices.Sorted(maps.Keys(o.Spec.Capacity)) {
		if q := o.Spec.Capacity[name]; q.Sign() <= 0 {
			return out, fmt.Errorf("NodeOverlay %s: spec.capacity[%s] is %s; a capacity must be positive (remove the entry to leave the type's own)", o.Name, name, q.String())
		}
	}
	return out, nil
}

// ParsePriceAdjustment reads "+0.5", "-0.5", "+10%" or "-15%".
func ParsePriceAdjustment(s string) (PriceAdjustment, error) {
	var a PriceAdjustment
	body := s
	if strings.HasSuffix(body, "%") {
		a.Percent = true
		body = strings.TrimSuffix(body, "%")
	}
	if !strings.HasPrefix(body, "+") && !strings.HasPrefix(body, "-") {
		return a, fmt.Errorf("%q must start with + or -, e.g. \"+0.5\" or \"-10%%\"", s)
	}
	v, err := strconv.ParseFloat(body, 64)
	if err != nil {
		return a, fmt.Errorf("%q is not a signed number or percentage, e.g. \"+0.5\" or \"-10%%\"", s)
	}
	if a.Percent && v < -100 {
		return a, fmt.Errorf("%q would make prices negative; use at least -100%%", s)
	}
	a.Amount = v
	return a, nil
}

// offeringKeys are requirement keys that select offerings, not instance types.
var offeringKeys = map[string]bool{corev1.LabelTopologyZone: true, CapacityTypeLabel: true}

// ApplyOverlays returns the instance types as a NodePool with the given labels
// sees them once the overlays apply. Overlays of higher weight win, then names
// in alphabetical order; price and each capacity resource are decided
// separately. The input is not modified.
func ApplyOverlays(its []*InstanceType, overlays []Overlay, nodePoolLabels map[string]string) []*InstanceType {
	if len(overlays) == 0 {
		return its
	}
	ordered := append([]Overlay(nil), overlays...)
	sort.SliceStable(ordered, func(i, j int) bool {
		if ordered[i].Weight != ordered[j].Weight {
			return ordered[i].Weight > ordered[j].Weight
		}
		return ordered[i].Name < ordered[j].Name
	})
	poolReqs := scheduling.FromLabels(nodePoolLabels)
	out := make([]*InstanceType, len(its))
	for i, it := range its {
		out[i] = applyTo(it, ordered, poolReqs)
	}
	return out
}

func applyTo(it *InstanceType, overlays []Overlay, poolReqs scheduling.Requirements) *InstanceType {
	var c *InstanceType // copied on first change
	ensure := func() {
		if c == nil {
			cp := *it
			cp.Capacity = it.Capacity.DeepCopy()
			cp.Offerings = append(Offerings(nil), it.Offerings...)
			cp.CapacitySource = map[corev1.ResourceName]string{}
			for k, v := range it.CapacitySource {
				cp.CapacitySource[k] = v
			}
			c = &cp
		}
	}
	labels := it.Requirements.Intersect(poolReqs).Labels()
	priced := make([]bool, len(it.Offerings))
	capSet := map[corev1.ResourceName]bool{}
	for _, o := range overlays {
		if !matchesType(o.Requirements, labels) {
			continue
		}
		if o.Price != nil || o.Adjustment != nil {
			for i, off := range it.Offerings {
				if priced[i] || !matchesOffering(o.Requirements, off) {
					continue
				}
				ensure()
				priced[i] = true
				if o.Price != nil {
					c.Offerings[i].Price = *o.Price
				} else {
					c.Offerings[i].Price = o.Adjustment.Apply(off.Price)
				}
			}
		}
		for name, q := range o.Capacity {
			if capSet[name] {
				continue
			}
			ensure()
			capSet[name] = true
			c.Capacity[name] = q
			c.CapacitySource[name] = "NodeOverlay " + o.Name
		}
	}
	if c == nil {
		return it
	}
	return c
}

// matchesType reports whether the overlay's requirements, offering keys aside,
// hold for the labels a node of this type in this NodePool would have.
func matchesType(overlay scheduling.Requirements, labels map[string]string) bool {
	for key, r := range overlay {
		if offeringKeys[key] {
			continue
		}
		if err := (scheduling.Requirements{key: r}).Matches(labels); err != nil {
			return false
		}
	}
	return true
}

func matchesOffering(overlay scheduling.Requirements, o Offering) bool {
	if r, ok := overlay[corev1.LabelTopologyZone]; ok && !r.Has(o.Zone) {
		return false
	}
	if r, ok := overlay[CapacityTypeLabel]; ok && !r.Has(o.CapacityType) {
		return false
	}
	return true
}

// Package nodeoverlay writes each NodeOverlay's conditions: ValidationSucceeded
// (the overlay compiles: a price or a price adjustment, positive capacities,
// no ephemeral-storage) and Ready, so `kubectl get nodeoverlays` says which
// overlays apply.
package nodeoverlay

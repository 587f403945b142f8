// Package charts holds nodewright's Helm charts: nodewright (the controller,
// its RBAC rules and, in crds/, the CRDs) and nodewright-crd (the CRDs alone,
// as templates, for installing and upgrading them apart as Karpenter's
// karpenter-crd chart does). The package has no code: its tests load,
// lint, render and install the charts with Helm's Go SDK, which is why Helm
// is a dependency of these tests and of no binary.
package charts

// Package testkube holds what the end-to-end tests share: bringing up a
// full local control plane with the controller built from this tree, and
// waiting on a live cluster for a condition or for pods to run.
package testkube

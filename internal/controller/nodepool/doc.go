// Package nodepool keeps each NodePool's status as Karpenter writes it:
// status.nodes and status.resources (the NodePool's nodes and the sum of
// their capacity, which `kubectl get nodepools` shows), and the conditions
// NodeClassReady, ValidationSucceeded, NodeRegistrationHealthy and Ready,
// whether or not any pod is pending. NodeRegistrationHealthy is decided from
// the registration outcomes the NodeClaim lifecycle controller records in
// Registrations.
package nodepool

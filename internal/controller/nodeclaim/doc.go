// Package nodeclaim drives a NodeClaim through its lifecycle: Launched (the
// provider created an instance), Registered (a node with the instance's
// providerID appeared and took the claim's labels and taints), Initialized
// (the node is Ready, its startup and ephemeral taints are gone, and the
// extended resources asked for are there). It also ends NodeClaims that
// failed (launch or registration timed out, the instance vanished) and
// removes instances whose NodeClaim is gone.
//
// After initialization it keeps Karpenter's Consolidatable (consolidateAfter
// has passed since the last pod event) and ConsistentStateFound (the node is
// the shape the claim promised; a deleted claim's drain is not held by a
// PodDisruptionBudget) current, and it records each claim's registration
// outcome for its NodePool's NodeRegistrationHealthy.
//
// A node that goes NotReady while it initializes is not a failure: the claim
// stays in flight, so its capacity keeps counting and nothing else is
// launched for its pods.
package nodeclaim

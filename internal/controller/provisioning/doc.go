// Package provisioning launches capacity for pending pods. It batches pod
// events (a burst of pods is planned together, which packs better and costs
// one solve), snapshots the cluster from the informer cache, asks the solver
// for a plan, and creates the plan's NodeClaims with the pods nominated to
// them written into the same object, so neither the next loop nor a
// restarted controller launches for those pods twice.
package provisioning

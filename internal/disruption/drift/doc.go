// Package drift decides, without I/O, whether a NodeClaim no longer matches
// what its NodePool would launch today and whether it has outlived its
// expireAfter. It computes the NodePool template hash that the provisioner
// stamps on every NodeClaim (Hash, Stamp), compares a claim against its
// NodePool's template hash and requirements plus the cloud provider's own
// verdict (Drifted), and says when a claim expires (Expired). Controllers
// observe the cluster, call these functions and write the results; the
// simulator calls the same functions.
package drift

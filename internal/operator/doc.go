// Package operator assembles the nodewright controller: a controller-runtime
// manager with leader election, health and readiness probes, a Prometheus
// metrics endpoint and JSON logs, running the provisioner, the NodeClaim
// lifecycle, garbage collection and the cloud provider's own loops.
package operator

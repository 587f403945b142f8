// Package livecluster reads a running cluster for the commands that look at
// one without changing it (explain, simulate --from-cluster): it finds the
// kubeconfig and context, connects, and lists objects as kubectl get -o
// json prints them. Its errors name what could not be read and how to fix
// it: no kubeconfig (and where it looked), an API server out of reach,
// credentials refused, or RBAC that forbids listing a resource.
//
// It only ever reads: what it hands out is a client.Reader for listing,
// and the client it connects with is used for get and list alone.
package livecluster

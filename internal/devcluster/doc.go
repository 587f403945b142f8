// Package devcluster starts and stops a complete local Kubernetes control
// plane, with kwok standing in for every kubelet, for nodewright's end-to-end
// tests and for `nodewright dev up` / `nodewright dev down`.
//
// nodewright has to be tested against what a real cluster does with its
// decisions: kube-scheduler binding pods to the nodes it launched,
// kube-controller-manager turning Deployments and Jobs into pods, the node
// lifecycle controller reacting to NotReady nodes. An API server alone
// (internal/testcluster) runs none of that, and kind needs a container runtime
// that CI and developer machines may not have. kwokctl's binary runtime runs
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the kwok
// controller as plain processes, in a few seconds, from the binaries that
// hack/kube-binaries.sh builds from the Go module proxy. This package drives
// kwokctl rather than starting the processes itself so that certificates,
// flags and kwok's own wiring stay kwok's tested defaults.
//
// kwokctl is told the path of every binary and runs with its own KWOK_WORKDIR,
// so it never downloads anything and never touches ~/.kwok or ~/.kube/config.
// Each cluster gets its own ports, picked here, so that clusters of different
// names (say, the end-to-end tests of two packages that `go test ./...` runs
// at once) coexist.
//
// kwok animates only the nodes nodewright's kwok cloud provider creates, those
// annotated kwok.x-k8s.io/node=fake: it makes them Ready, renews their leases,
// and runs, completes and removes the pods bound to them. A node labelled
// nodewright.dev/kwok-not-ready=true is left alone so that a fault injector
// can hold it NotReady; kwok.yaml says how and why.
package devcluster

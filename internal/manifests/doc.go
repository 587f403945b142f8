// Package manifests reads the Kubernetes objects a simulation starts from:
// files or directories of manifests as kubectl prints them (multi-document
// YAML, JSON, kind: List), typed into the project's API types. It applies
// the defaults the API server would, expands workloads without pods into
// pending pods, and reports every object it cannot use as a Problem that
// names the file, the object and the fix, loading the rest.
package manifests

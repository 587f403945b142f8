// Package rbac holds the controller's ServiceAccount and its RBAC rules
// (nodewright.yaml), embedded so the local environment applies the same
// rules a cluster would and runs the controller under them.
package rbac

import _ "embed"

// Manifest is nodewright.yaml: a Namespace, ServiceAccount, ClusterRole,
// Role and their bindings.
//
//go:embed nodewright.yaml
var Manifest []byte

// ServiceAccount is the user the controller acts as.
const ServiceAccount = "system:serviceaccount:nodewright:nodewright"

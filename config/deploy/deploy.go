// Package deploy holds the controller's Deployment, PodDisruptionBudget and
// metrics Service (nodewright.yaml), embedded so tests check them against a
// real API server and against the controller's own flags.
package deploy

import _ "embed"

// Manifest is nodewright.yaml.
//
//go:embed nodewright.yaml
var Manifest []byte

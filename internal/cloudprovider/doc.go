// Package cloudprovider is the small interface between nodewright's
// controllers and a source of machines: list the instance types a NodePool may
// use, create an instance for a NodeClaim, and get, list and delete instances.
// Controllers never talk to a cloud directly; the kwok provider (subpackage
// kwok) implements this interface for local clusters.
package cloudprovider

// Package kwok is nodewright's cloud provider for clusters whose nodes kwok
// simulates: it "launches" an instance by creating a Node object that kwok
// animates. This file set holds its instance-type catalog: a built-in one of
// familiar families and sizes, or one read from a JSON file.
package kwok

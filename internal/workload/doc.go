// Package workload makes synthetic clusters for benchmarks and randomized
// tests: Karpenter's own scheduling benchmark mix (so the two autoscalers can
// be compared on identical input), its fake instance types, and large existing
// clusters. Every generator takes a seed and is deterministic.
package workload

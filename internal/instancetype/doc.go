// Package instancetype models the machines a cloud provider can launch: their
// capacity, the overhead that turns capacity into allocatable (VM memory
// overhead, kube-reserved, system-reserved, eviction threshold), and their
// offerings (zone, capacity type, price, availability). It also applies
// NodeOverlays and learned capacity, and explains every allocatable figure as
// arithmetic a person can check. It does no I/O.
package instancetype

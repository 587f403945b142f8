// Package room says where kube-scheduler would put the pods a drain is
// about to evict. The solver packs pods as tightly as it can; kube-scheduler
// takes them one at a time in its queue's order and spreads each over the
// least used node that fits. Where the two disagree, a drain that trusted
// the packing evicts a pod whose replacement then finds every ready node
// too full, although the nodes together had room for it. Homeless gives
// the drain and the provisioner the same answer: which drained pods
// kube-scheduler's way would leave without a node, so that the drain holds
// them and the provisioner launches room for them elsewhere.
package room

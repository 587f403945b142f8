// Package plancheck checks a solver Plan independently of the solver: it
// builds the nodes the plan would produce (the existing ones, plus one per
// NewClaim, launched as the provider would launch it), then binds the planned
// pods one by one in plan order, as kube-scheduler would, and reports every
// placement kube-scheduler's filters would refuse, along with structural
// mistakes in the plan itself (a pod placed twice, a claim whose requests do
// not add up, a NodePool limit exceeded). It also checks the plan is
// complete: a pod the plan lists as unschedulable must fit neither a node of
// the cluster the plan leaves nor a fresh node any NodePool could launch.
//
// It shares no code path with package solver on purpose: a bug the two shared
// would be invisible. Constraints are evaluated with the helpers kube-scheduler
// itself uses (k8s.io/component-helpers node affinity, taints and pod
// requests; apimachinery label selectors) and plain, slow-but-obvious code.
// Only the solver's exported types and Plan methods are used.
//
// What the checker deliberately leaves out: preferences (preferred affinity,
// ScheduleAnyway spreads, PreferNoSchedule taints) are soft in kube-scheduler
// and are not checked. A namespaceSelector matches the labels of the
// namespaces in solver.Input.Namespaces; a namespace not listed has none.
package plancheck

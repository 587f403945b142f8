package planner

import (
	"time"

	policyv1 "k8s.io/api/policy/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/disruption/budget"
	"github.com/nodewright/nodewright/internal/snapshot"
	"github.com/nodewright/nodewright/internal/solver"
)

// Input is everything one disruption decision looks at.
type Input struct {
	Cluster *snapshot.Cluster
	PDBs    []*policyv1.PodDisruptionBudget
	// PoolTypes are the instance types of each NodePool, as provisioning
	// resolves them; they price candidates and replacements.
	PoolTypes snapshot.PoolTypes
	// CloudDrift holds the cloud provider's drift reason per NodeClaim name
	// ("ImageDrift"); absent means not drifted.
	CloudDrift map[string]string
	// RepairPolicies say when a node is broken for good (node repair); nil
	// is cloudprovider.DefaultRepairPolicies.
	RepairPolicies []cloudprovider.RepairPolicy
	// Started are recent disruption starts per NodePool, for rate budgets.
	Started map[string][]time.Time
	Now     time.Time
	Options Options
	// SingleNodeCursor is where single-node consolidation starts among its
	// candidates: the previous Plan's NextSingleNodeCursor.
	SingleNodeCursor int
	// Requests remembers pods' requests across the loop's simulations, and
	// across loops when the caller keeps it (the simulator, whose pods never
	// change, forgetting those that go); nil makes one for this loop.
	Requests *solver.Requests
}

// Options tune the planner.
type Options struct {
	// SpotToSpot lets consolidation replace a spot node by a cheaper spot
	// node; off, spot nodes are only ever deleted, as in Karpenter.
	SpotToSpot bool
	// SpotToSpotMinTypes is Karpenter's flexibility guard: a single spot
	// node is replaced only when at least this many instance types are
	// cheaper, and a spot replacement launches from at most this many of
	// the cheapest, so that it is not at once cheaper to replace again.
	// Zero is 15, Karpenter's value.
	SpotToSpotMinTypes int
	// MultiNodeMax bounds how many nodes one multi-node consolidation takes.
	MultiNodeMax int
	// NominationGrace is the provisioner's: pods nominated to a NodeClaim
	// count on it for this long after it initialized.
	NominationGrace time.Duration
	// SingleNodeSimulations bounds how many nodes single-node consolidation
	// simulates per loop; the next loop goes on from Input.SingleNodeCursor.
	SingleNodeSimulations int
	// Policies are --min-values-policy and --preference-policy: simulations
	// plan as provisioning does.
	Policies solver.Policies
}

// DefaultOptions are Karpenter's.
func DefaultOptions() Options {
	return Options{MultiNodeMax: 100, NominationGrace: time.Minute, SingleNodeSimulations: 50}
}

// Reason is why a command disrupts its nodes. The budget reasons are
// Karpenter's; Expired is not governed by budgets.
type Reason = karpv1.DisruptionReason

// ReasonExpired marks expiration, which no budget governs.
const ReasonExpired Reason = "Expired"

// Method is how a command disrupts.
type Method string

const (
	// Delete removes the nodes; their pods fit elsewhere.
	Delete Method = "Delete"
	// Replace launches Replacements first and removes the nodes once they
	// are initialized.
	Replace Method = "Replace"
)

// Command is one disruption to carry out.
type Command struct {
	Reason Reason
	Method Method
	// Claims are the NodeClaims to disrupt, by name; Nodes their nodes.
	Claims []string
	Nodes  []string
	// Pools are the NodePools of Claims, in the same order.
	Pools []string
	// Replacements to launch before the nodes go.
	Replacements []*solver.NewClaim
	// Savings is the hourly price removed less the hourly price added.
	Savings float64
	Message string
	// Condition is, for node repair, the node condition that failed its
	// repair policy (Ready, say).
	Condition string
	// Consolidation marks emptiness and consolidation decisions, which
	// Validate holds back until later loops decide them again.
	Consolidation bool
	// Scores are the Balanced NodePools' verdicts on the move (none when
	// no NodePool of it is Balanced).
	Scores []Score
	// receivers are the existing nodes the command's pods move to: no later
	// command of the same loop may take them away.
	receivers []string
}

// Candidate is one node as the planner saw it.
type Candidate struct {
	Claim    string
	Node     string
	NodePool string
	// Price is the hourly price of the node's offering; 0 when unknown.
	Price float64
	// Pods is how many pods would have to move.
	Pods int
	// State is what the planner decided: "Disrupting", "Attrition", or
	// "Kept"; "Validating" once MarkWaiting shows it chosen but held back.
	State string
	// Blockers say, in words, why the node is kept; empty when it is
	// disrupted or nothing about it calls for disruption.
	Blockers []string
	// Drift and Expired record what was found even when blocked.
	Drift   string
	Expired bool
	// Nominated is how many pending pods are nominated to it within the
	// nomination grace: pods on their way from a scale-up, which hold the
	// node for seconds, not a lasting reason to keep it.
	Nominated int
	// Policy is why its NodePool never consolidates its nodes
	// (consolidateAfter: Never, or a static NodePool); "" when it may. A
	// node kept for that alone is kept as the user asked, not blocked.
	Policy string
}

// Attrition is a node left to drain by attrition: it gets no new pods and
// goes once its protected pods end, or when MaxWait has passed.
type Attrition struct {
	Claim, Node, NodePool string
	// Protected are the do-not-disrupt pods it waits for.
	Protected []string
}

// Plan is the planner's answer.
type Plan struct {
	Commands []Command
	// Attrition are the nodes to keep tainted for drain by attrition; any
	// other node carrying the attrition taint should lose it.
	Attrition []Attrition
	// Candidates are every initialized node the planner looked at, sorted by
	// claim name.
	Candidates []Candidate
	// Budgets per NodePool, after the commands of this plan.
	Budgets map[string]budget.Result
	// BudgetErrors say which NodePools' budgets could not be read.
	BudgetErrors map[string]error
	// HeldByBudget are empty nodes emptiness would delete but for a budget,
	// one per command; Validate keeps their validation running.
	HeldByBudget []Command
	// NextSingleNodeCursor is the next loop's Input.SingleNodeCursor.
	NextSingleNodeCursor int
	// RepairBlocked says, per NodePool, why node repair is held back (too
	// many of its nodes unhealthy at once).
	RepairBlocked map[string]string
	// Rejected are the Balanced scores of single-node moves turned down
	// because their savings were not worth the disruption.
	Rejected []Score
	// Simulations counts the solver runs this plan took.
	Simulations int
}

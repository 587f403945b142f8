package nodepool

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

// RegistrationWindow is how many of a NodePool's latest registration
// outcomes NodeRegistrationHealthy is decided from, as in Karpenter
// (pkg/state/nodepoolhealth): once half of them are failures it is False.
// One NodeClaim that never registers is then not enough to mark a pool
// unhealthy, two in the last four are.
const RegistrationWindow = 4

// Reasons of NodeRegistrationHealthy.
const (
	ReasonRegistrationFailed       = "RegistrationFailed"
	ReasonAwaitingNodeRegistration = "AwaitingNodeRegistration"
)

// Outcome is how one NodeClaim's registration ended.
type Outcome struct {
	// NodeClaim names the claim; a claim counts once, by its last outcome.
	NodeClaim string
	// Registered is true when its node registered, false when the claim was
	// given up because it did not launch or register in time.
	Registered bool
	// Reason and Message say why a claim failed; they become the
	// condition's when this failure turns it False.
	Reason, Message string
}

// generations is what a record of outcomes belongs to: the NodePool's
// generation and the NodeClass generation its status last observed.
// Karpenter starts over when either changes, since nodes may now be
// launched differently. A class generation of 0 is not observed yet and
// matches any.
type generations struct{ pool, class int64 }

func generationsOf(np *karpv1.NodePool) generations {
	return generations{np.Generation, np.Status.NodeClassObservedGeneration}
}

func (g generations) newerThan(o generations) bool {
	return g.pool > o.pool || (g.pool == o.pool && o.class != 0 && g.class > o.class)
}

// history is the latest outcomes of one NodePool, oldest first.
type history struct {
	at       generations
	outcomes []Outcome
}

// current returns h (nil when nothing was recorded) as it stands at at: h
// itself if it was kept at those generations (or at newer ones: the caller
// read an older copy of the NodePool, and its outcome still counts), else a
// new record. A new record starts from np's condition when that was written
// at those generations: a restarted process knows nothing else, and
// Karpenter fills its buffer the same way (True is one success, False half
// the window of failures).
func (h *history) current(np *karpv1.NodePool, at generations) history {
	if h != nil {
		switch {
		case h.at.pool == at.pool && (h.at.class == at.class || h.at.class == 0 || at.class == 0):
			out := *h
			out.at.class = max(h.at.class, at.class)
			return out
		case h.at.newerThan(at):
			return *h
		}
	}
	out := history{at: at}
	c := meta.FindStatusCondition(np.Status.Conditions, ConditionNodeRegistrationHealthy)
	if c == nil || c.ObservedGeneration != at.pool || (at.class != 0 && np.Status.NodeClassObservedGeneration != at.class) {
		return out
	}
	switch c.Status {
	case metav1.ConditionTrue:
		out.outcomes = []Outcome{{Registered: true}}
	case metav1.ConditionFalse:
		for range RegistrationWindow / 2 {
			out.outcomes = append(out.outcomes, Outcome{Reason: c.Reason, Message: c.Message})
		}
	}
	return out
}

// with returns h with o added: a claim's earlier outcome gives way to its
// new one (a status write retried after a conflict records it again), and
// only the last RegistrationWindow are kept.
func (h history) with(o Outcome) history {
	out := history{at: h.at}
	for _, x := range h.outcomes {
		if o.NodeClaim == "" || x.NodeClaim != o.NodeClaim {
			out.outcomes = append(out.outcomes, x)
		}
	}
	out.outcomes = append(out.outcomes, o)
	if n := len(out.outcomes); n > RegistrationWindow {
		out.outcomes = out.outcomes[n-RegistrationWindow:]
	}
	return out
}

// Registrations remembers the latest registration outcomes of each
// NodePool's NodeClaims: the NodeClaim lifecycle controller records them and
// the status controller decides NodeRegistrationHealthy from them. Like
// Karpenter's, the record is in memory; a restarted process starts again
// from the condition.
type Registrations struct {
	mu    sync.Mutex
	pools map[types.UID]history
}

// SharedRegistrations is the process's record, which both controllers use
// unless given another: they run in the same process, as Karpenter's
// lifecycle and registration-health controllers share one state.
var SharedRegistrations = &Registrations{}

// Record adds the outcome of one of np's NodeClaims, np as the recorder
// read it.
func (r *Registrations) Record(np *karpv1.NodePool, o Outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pools == nil {
		r.pools = map[types.UID]history{}
	}
	h, ok := r.pools[np.UID]
	var prev *history
	if ok {
		prev = &h
	}
	r.pools[np.UID] = prev.current(np, generationsOf(np)).with(o)
}

// Outcomes returns np's latest outcomes since its spec, or the NodeClass
// now at classGeneration (0: unknown), last changed.
func (r *Registrations) Outcomes(np *karpv1.NodePool, classGeneration int64) []Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pools == nil {
		r.pools = map[types.UID]history{}
	}
	at := generationsOf(np)
	if classGeneration != 0 {
		at.class = classGeneration
	}
	h, ok := r.pools[np.UID]
	var prev *history
	if ok {
		prev = &h
	}
	cur := prev.current(np, at)
	r.pools[np.UID] = cur
	return append([]Outcome(nil), cur.outcomes...)
}

// registrationHealthy decides NodeRegistrationHealthy from the outcomes
// since the NodePool or its NodeClass last changed. prev is the condition
// as it stands and current whether it was decided at those generations.
// It returns the condition to set, or nil to keep prev.
//
// As in Karpenter, the condition only moves on evidence: half the window
// failed makes it False (naming the failure that did), a success with fewer
// failures than that makes it True, and otherwise it stays as it was, or
// Unknown after a change.
func registrationHealthy(prev *metav1.Condition, current bool, outcomes []Outcome) *metav1.Condition {
	failures, succeeded := 0, false
	var last Outcome
	for _, o := range outcomes {
		if o.Registered {
			succeeded = true
			continue
		}
		failures++
		last = o
	}
	switch {
	case failures*2 >= RegistrationWindow:
		if current && prev.Status == metav1.ConditionFalse {
			return nil // keep the failure that turned it False
		}
		reason, msg := last.Reason, last.Message
		if reason == "" {
			reason = ReasonRegistrationFailed
		}
		return &metav1.Condition{Type: ConditionNodeRegistrationHealthy, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	case succeeded:
		return &metav1.Condition{Type: ConditionNodeRegistrationHealthy, Status: metav1.ConditionTrue, Reason: ConditionNodeRegistrationHealthy}
	case current:
		return nil
	case prev == nil:
		return &metav1.Condition{Type: ConditionNodeRegistrationHealthy, Status: metav1.ConditionUnknown, Reason: ReasonAwaitingNodeRegistration,
			Message: "no node of this NodePool has registered yet"}
	default:
		return &metav1.Condition{Type: ConditionNodeRegistrationHealthy, Status: metav1.ConditionUnknown, Reason: ReasonAwaitingNodeRegistration,
			Message: "the NodePool or its NodeClass changed; no node has registered since"}
	}
}

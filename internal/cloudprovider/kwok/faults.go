package kwok

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	kwokv1alpha1 "github.com/nodewright/nodewright/api/kwok/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
)

// effectiveFaults fills what class leaves out from the provider's defaults,
// field by field. Lists replace rather than merge: a class that lists
// offerings out of capacity means exactly those.
func effectiveFaults(class *kwokv1alpha1.KWOKFaults, defaults kwokv1alpha1.KWOKFaults) kwokv1alpha1.KWOKFaults {
	out := *defaults.DeepCopy()
	if class == nil {
		return out
	}
	c := class.DeepCopy()
	if c.LaunchErrors != nil {
		out.LaunchErrors = c.LaunchErrors
	}
	if c.LaunchErrorPercent != nil {
		out.LaunchErrorPercent = c.LaunchErrorPercent
	}
	if c.DeleteErrorPercent != nil {
		out.DeleteErrorPercent = c.DeleteErrorPercent
	}
	if c.ThrottledPercent != nil {
		out.ThrottledPercent = c.ThrottledPercent
	}
	if c.LostResponsePercent != nil {
		out.LostResponsePercent = c.LostResponsePercent
	}
	if c.InsufficientCapacity != nil {
		out.InsufficientCapacity = c.InsufficientCapacity
	}
	if c.RegistrationDelay != nil {
		out.RegistrationDelay = c.RegistrationDelay
	}
	if c.NotReady != nil {
		out.NotReady = c.NotReady
	}
	if c.AgentTaints != nil {
		out.AgentTaints = c.AgentTaints
	}
	return out
}

func registrationDelay(f kwokv1alpha1.KWOKFaults) time.Duration {
	if f.RegistrationDelay == nil || f.RegistrationDelay.Duration < 0 {
		return 0
	}
	return f.RegistrationDelay.Duration
}

// outOfCapacity reports whether the faults make offering o short of capacity.
func outOfCapacity(f kwokv1alpha1.KWOKFaults, o cloudprovider.Offering) bool {
	for _, s := range f.InsufficientCapacity {
		if (s.InstanceType == "" || s.InstanceType == o.InstanceType) &&
			(s.Zone == "" || s.Zone == o.Zone) &&
			(s.CapacityType == "" || s.CapacityType == o.CapacityType) {
			return true
		}
	}
	return false
}

// nodeFaults are the faults that play out on a Node once it exists. They are
// stored on the Node when it is created, so that the agent needs nothing but
// the Node, and editing the NodeClass does not change Nodes already made.
func nodeFaults(f kwokv1alpha1.KWOKFaults) kwokv1alpha1.KWOKFaults {
	return kwokv1alpha1.KWOKFaults{NotReady: f.NotReady, AgentTaints: f.AgentTaints}
}

func encodeNodeFaults(f kwokv1alpha1.KWOKFaults) (string, bool) {
	if f.NotReady == nil && len(f.AgentTaints) == 0 {
		return "", false
	}
	b, err := json.Marshal(f)
	if err != nil {
		// A struct of strings and durations always marshals.
		panic(fmt.Sprintf("encoding node faults: %v", err))
	}
	return string(b), true
}

func decodeNodeFaults(s string) (kwokv1alpha1.KWOKFaults, error) {
	var f kwokv1alpha1.KWOKFaults
	if s == "" {
		return f, nil
	}
	if err := json.Unmarshal([]byte(s), &f); err != nil {
		return f, fmt.Errorf("annotation %s: %w", FaultsAnnotation, err)
	}
	return f, nil
}

// launchErrorCounter counts the launches that failed on purpose, per
// KWOKNodeClass (by UID, so that a class deleted and made again starts over).
// It lives in memory: a restarted controller fails the first N launches again,
// as docs/kwok.md says.
type launchErrorCounter struct {
	mu     sync.Mutex
	failed map[types.UID]int32
}

// fail reports whether this launch for class uid must fail because fewer
// than limit have failed so far, and counts it; n is its number (1-based).
func (c *launchErrorCounter) fail(uid types.UID, limit *int32) (n int32, fail bool) {
	if limit == nil || *limit <= 0 {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failed == nil {
		c.failed = map[types.UID]int32{}
	}
	if c.failed[uid] >= *limit {
		return 0, false
	}
	c.failed[uid]++
	return c.failed[uid], true
}

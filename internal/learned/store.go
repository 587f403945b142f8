package learned

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodewright/nodewright/internal/instancetype"
)

// ConfigMapName is the ConfigMap, in the controller's namespace, that holds
// learned capacities: one key per instance type, a JSON Entry as value.
const ConfigMapName = "nodewright-learned-capacity"

// Entry is what was learned about one instance type.
type Entry struct {
	Capacity corev1.ResourceList `json:"capacity"`
	// Node is the node it was learned from, for explanations.
	Node     string      `json:"node"`
	Observed metav1.Time `json:"observed"`
}

// Store holds learned capacities in memory and in a ConfigMap.
type Store struct {
	client    client.Client
	namespace string

	mu      sync.RWMutex
	entries map[string]Entry
}

// NewStore returns a store persisting to namespace; call Load before use.
func NewStore(c client.Client, namespace string) *Store {
	return &Store{client: c, namespace: namespace, entries: map[string]Entry{}}
}

// Load reads the persisted entries and makes them the store's: called at
// start, and again when this replica becomes leader, since a standby's copy
// is as old as its start and the leader it replaces may have learned since.
// The ConfigMap says which instance types are known: an entry removed from
// it is forgotten here too, and a missing ConfigMap forgets them all. Where
// both have an entry, the newer observation wins, and an entry observed
// after the read began is kept, so a Record racing the read is not undone.
// An entry that does not parse is skipped, so one bad value never hides the
// others.
func (s *Store) Load(ctx context.Context, r client.Reader) error {
	began := time.Now()
	cm := &corev1.ConfigMap{}
	err := r.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: ConfigMapName}, cm)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading learned capacity from ConfigMap %s/%s: %w", s.namespace, ConfigMapName, err)
	}
	persisted := make(map[string]Entry, len(cm.Data))
	for name, v := range cm.Data {
		var e Entry
		if json.Unmarshal([]byte(v), &e) == nil && len(e.Capacity) > 0 {
			persisted[name] = e
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, mine := range s.entries {
		e, ok := persisted[name]
		if (ok && mine.Observed.After(e.Observed.Time)) || (!ok && !mine.Observed.Time.Before(began)) {
			persisted[name] = mine
		}
	}
	s.entries = persisted
	return nil
}

// Get returns what was learned for an instance type.
func (s *Store) Get(instanceType string) (Entry, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.entries[instanceType]
	return e, ok
}

// Record remembers capacity for an instance type and persists it. Only
// resources that differ from what is already known cause a write.
func (s *Store) Record(ctx context.Context, instanceType, node string, capacity corev1.ResourceList, now time.Time) error {
	s.mu.Lock()
	old, had := s.entries[instanceType]
	if had && equalLists(old.Capacity, capacity) {
		s.mu.Unlock()
		return nil
	}
	e := Entry{Capacity: capacity.DeepCopy(), Node: node, Observed: metav1.NewTime(now)}
	s.entries[instanceType] = e
	s.mu.Unlock()

	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	key := client.ObjectKey{Namespace: s.namespace, Name: ConfigMapName}
	cm := &corev1.ConfigMap{}
	if err := s.client.Get(ctx, key, cm); apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: ConfigMapName},
			Data:       map[string]string{instanceType: string(b)},
		}
		if err := s.client.Create(ctx, cm); err != nil {
			return fmt.Errorf("persisting learned capacity of %s: %w", instanceType, err)
		}
		return nil
	} else if err != nil {
		return fmt.Errorf("persisting learned capacity of %s: %w", instanceType, err)
	}
	patch := client.MergeFrom(cm.DeepCopy())
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[instanceType] = string(b)
	if err := s.client.Patch(ctx, cm, patch); err != nil {
		return fmt.Errorf("persisting learned capacity of %s: %w", instanceType, err)
	}
	return nil
}

// Apply returns the instance types with learned capacities in place of the
// catalog's. A learned memory is the node's real memory, so the VM overhead
// estimate no longer applies to it. The input is not modified.
func (s *Store) Apply(its []*instancetype.InstanceType) []*instancetype.InstanceType {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.entries) == 0 {
		return its
	}
	out := make([]*instancetype.InstanceType, len(its))
	for i, it := range its {
		e, ok := s.entries[it.Name]
		if !ok {
			out[i] = it
			continue
		}
		cp := *it
		cp.Capacity = it.Capacity.DeepCopy()
		cp.CapacitySource = map[corev1.ResourceName]string{}
		for k, v := range it.CapacitySource {
			cp.CapacitySource[k] = v
		}
		for name, q := range e.Capacity {
			if _, known := cp.Capacity[name]; !known {
				continue
			}
			cp.Capacity[name] = q
			cp.CapacitySource[name] = "learned from node " + e.Node
		}
		out[i] = &cp
	}
	return out
}

// Differences returns the resources whose capacity on a registered node
// differs from what the model expected for its type: memory against nominal
// memory less the VM overhead estimate, the rest against the catalog.
func Differences(it *instancetype.InstanceType, nodeCapacity corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
		model, ok := it.Capacity[name]
		real, has := nodeCapacity[name]
		if !ok || !has {
			continue
		}
		if name == corev1.ResourceMemory {
			model = model.DeepCopy()
			model.Sub(it.VMMemoryOverhead())
			// Kernels round memory; a MiB either way is not worth learning.
			diff := real.DeepCopy()
			diff.Sub(model)
			if abs(diff.Value()) <= 1<<20 {
				continue
			}
		} else if real.Cmp(model) == 0 {
			continue
		}
		out[name] = real
	}
	return out
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func equalLists(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

// Snapshot lists the entries by instance type, for status and explain.
func (s *Store) Snapshot() map[string]Entry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]Entry, len(s.entries))
	for k, v := range s.entries {
		out[k] = v
	}
	return out
}

// Names lists the instance types with learned capacity, sorted.
func (s *Store) Names() []string {
	snap := s.Snapshot()
	out := make([]string, 0, len(snap))
	for k := range snap {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

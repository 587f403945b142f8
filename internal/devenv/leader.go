package devenv

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LeaseName and LeaseNamespace locate the controller's leader lease (the
// controller's default --namespace).
const (
	LeaseName      = "nodewright-leader"
	LeaseNamespace = "nodewright"
)

// Lease is the leader lease as the API server has it.
type Lease struct {
	// Holder is the leader's identity, hostname_uuid, new for every
	// process; "" when the lease was released or never taken.
	Holder string
	// Acquired and Renewed are when the holder took and last renewed it.
	Acquired, Renewed time.Time
	// Transitions counts the changes of holder.
	Transitions int32
}

// Lease reads the leader lease; a lease not yet created is the zero Lease.
func (e *Env) Lease(ctx context.Context) (Lease, error) {
	c, err := client.New(e.Config, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return Lease{}, err
	}
	var l coordinationv1.Lease
	if err := c.Get(ctx, client.ObjectKey{Namespace: LeaseNamespace, Name: LeaseName}, &l); client.IgnoreNotFound(err) != nil {
		return Lease{}, fmt.Errorf("reading lease %s/%s: %w", LeaseNamespace, LeaseName, err)
	}
	var out Lease
	if l.Spec.HolderIdentity != nil {
		out.Holder = *l.Spec.HolderIdentity
	}
	if l.Spec.AcquireTime != nil {
		out.Acquired = l.Spec.AcquireTime.Time
	}
	if l.Spec.RenewTime != nil {
		out.Renewed = l.Spec.RenewTime.Time
	}
	if l.Spec.LeaseTransitions != nil {
		out.Transitions = *l.Spec.LeaseTransitions
	}
	return out, nil
}

// Leader tells which running replica leads, by what each one's log says it
// did last: acquired the lease, or started, campaigned or lost it. The
// lease's holder identity names no process (controller-runtime makes it
// from the hostname, the same for all, and a random UUID), so the logs tell
// the replicas apart. It returns -1 when none says it leads, and an error
// when more than one does (the old leader has not noticed its loss yet).
func (e *Env) Leader() (int, error) {
	leader := -1
	for _, i := range e.Replicas() {
		leads, err := e.replicaLeads(i)
		if err != nil {
			return -1, err
		}
		if !leads {
			continue
		}
		if leader >= 0 {
			return -1, fmt.Errorf("replicas %d and %d both say they lead", leader, i)
		}
		leader = i
	}
	return leader, nil
}

// leadershipEvents are the log lines that change what a replica believes of
// its leadership, and what it believes after each.
var leadershipEvents = []struct {
	text  string
	leads bool
}{
	{"successfully acquired lease", true},
	{"starting nodewright controller", false},
	{"attempting to acquire leader lease", false},
	{"failed to renew lease", false},
	{"leader election lost", false},
	{"lost the leader lease", false},
}

// replicaLeads reads replica i's log on from where it read last.
func (e *Env) replicaLeads(i int) (bool, error) {
	p := e.procs[i]
	if p.scanned < p.logFrom {
		p.scanned = p.logFrom
	}
	f, err := os.Open(e.ReplicaLog(i))
	if err != nil {
		return false, err
	}
	defer f.Close()
	if _, err := f.Seek(p.scanned, io.SeekStart); err != nil {
		return false, err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return false, err
	}
	// A line being written is read once whole.
	end := bytes.LastIndexByte(b, '\n') + 1
	p.scanned += int64(end)
	lines := strings.Split(string(b[:end]), "\n")
	for j := len(lines) - 1; j >= 0; j-- {
		for _, ev := range leadershipEvents {
			if strings.Contains(lines[j], ev.text) {
				p.leads = ev.leads
				return p.leads, nil
			}
		}
	}
	return p.leads, nil
}

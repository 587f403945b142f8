package scale

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// connSampler counts, once a second, each process's established TCP
// connections to kube-apiserver. A client whose requests in flight outgrow
// the 100 streams kube-apiserver allows on one HTTP/2 connection opens
// more, each a TLS handshake on both sides; in a burst of bindings
// kube-scheduler held hundreds at once, and the handshakes took a tenth of
// kube-apiserver's CPU. The count of connections opened is a floor: one
// opened and closed between two samples is not seen.
type connSampler struct {
	port int
	pids map[string]int
	stop chan struct{}
	done sync.WaitGroup

	mu     sync.Mutex
	most   map[string]int
	opened map[string]map[uint64]bool
}

// startConnSampler samples the connections of pids (by component name) to
// the API server at apiHost (a rest.Config's Host) until close.
func startConnSampler(apiHost string, pids map[string]int) (*connSampler, error) {
	u, err := url.Parse(apiHost)
	if err != nil {
		return nil, fmt.Errorf("API server address %q: %w", apiHost, err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return nil, fmt.Errorf("API server address %q has no port", apiHost)
	}
	s := &connSampler{port: port, pids: pids, stop: make(chan struct{}),
		most: map[string]int{}, opened: map[string]map[uint64]bool{}}
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			s.sample()
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s, nil
}

func (s *connSampler) sample() {
	est := map[uint64]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		r, err := os.Open(f)
		if err != nil {
			continue
		}
		for inode := range establishedTo(r, s.port) {
			est[inode] = true
		}
		r.Close()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, pid := range s.pids {
		n := 0
		for _, inode := range socketInodes(pid) {
			if !est[inode] {
				continue
			}
			n++
			if s.opened[name] == nil {
				s.opened[name] = map[uint64]bool{}
			}
			s.opened[name][inode] = true
		}
		s.most[name] = max(s.most[name], n)
	}
}

// close stops the sampling.
func (s *connSampler) close() {
	if s.stop == nil {
		return
	}
	close(s.stop)
	s.done.Wait()
}

// report says, per process, the most connections held at once and how many
// were seen in all, so far.
func (s *connSampler) report() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(s.most)) {
		parts = append(parts, fmt.Sprintf("%s %d (%d seen in all)", n, s.most[n], len(s.opened[n])))
	}
	return strings.Join(parts, ", ")
}

// establishedTo returns the socket inodes of the established connections
// in a /proc/net/tcp table whose remote port is port.
func establishedTo(r io.Reader, port int) map[uint64]bool {
	out := map[uint64]bool{}
	sc := bufio.NewScanner(r)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[3] != "01" { // 01: TCP_ESTABLISHED
			continue
		}
		_, rport, ok := strings.Cut(f[2], ":")
		if !ok {
			continue
		}
		if p, err := strconv.ParseUint(rport, 16, 16); err != nil || int(p) != port {
			continue
		}
		if inode, err := strconv.ParseUint(f[9], 10, 64); err == nil && inode != 0 {
			out[inode] = true
		}
	}
	return out
}

// socketInodes lists the inodes of the sockets process pid has open.
func socketInodes(pid int) []uint64 {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []uint64
	for _, e := range ents {
		link, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if s, ok := strings.CutPrefix(link, "socket:["); ok {
			if inode, err := strconv.ParseUint(strings.TrimSuffix(s, "]"), 10, 64); err == nil {
				out = append(out, inode)
			}
		}
	}
	return out
}

// connections starts a sampler of the components' connections to the API
// server at apiHost, and the controller's if controller is not 0, and this
// benchmark's. It logs why it cannot, and returns a sampler that reports
// nothing.
func connections(apiHost string, comps map[string]int, controller int) *connSampler {
	pids := map[string]int{"this benchmark": os.Getpid()}
	for n, p := range comps {
		pids[n] = p
	}
	if controller != 0 {
		pids["controller"] = controller
	}
	s, err := startConnSampler(apiHost, pids)
	if err != nil {
		logf("connections to kube-apiserver will not be counted: %v", err)
		return &connSampler{}
	}
	return s
}

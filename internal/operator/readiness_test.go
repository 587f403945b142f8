package operator

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// The readiness check passes while the API server answers, fails as soon as
// it stops answering (connections refused) and passes again once it is back,
// without the check being made anew.
func TestReadinessFollowsAPIServerReachability(t *testing.T) {
	target, err := url.Parse(cluster.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, target.Host)
	cfg := rest.CopyConfig(cluster.Config)
	cfg.Host = "https://" + p.addr
	// No caching here, so that each Check asks the server.
	check, err := newAPIServerCheck(cfg, apiServerCheckTimeout, 0)
	if err != nil {
		t.Fatal(err)
	}

	if err := check.Check(nil); err != nil {
		t.Fatalf("check with the API server up: %v", err)
	}
	p.stop()
	start := time.Now()
	if err := check.Check(nil); err == nil {
		t.Fatal("check passed with the API server unreachable")
	} else {
		t.Logf("unreachable: failed in %v: %v", time.Since(start).Round(time.Millisecond), err)
	}
	p.start(t)
	if err := check.Check(nil); err != nil {
		t.Fatalf("check with the API server back: %v", err)
	}
}

// A server that accepts connections but never answers fails the check
// within its timeout, well inside the kubelet's one-second probe timeout.
func TestReadinessTimesOutOnSilentServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	check, err := newAPIServerCheck(&rest.Config{Host: "http://" + l.Addr().String()}, apiServerCheckTimeout, 0)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := check.Check(nil); err == nil {
		t.Fatal("check passed against a server that never answers")
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("check took %v, want under the kubelet's 1s probe timeout", took)
	}
}

// Within maxAge the last answer is returned without a request, so that
// probes arriving together cost the API server one request.
func TestReadinessCachesAnswer(t *testing.T) {
	target, err := url.Parse(cluster.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, target.Host)
	cfg := rest.CopyConfig(cluster.Config)
	cfg.Host = "https://" + p.addr
	check, err := newAPIServerCheck(cfg, apiServerCheckTimeout, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	check.now = func() time.Time { return now }
	if err := check.Check(nil); err != nil {
		t.Fatal(err)
	}
	p.stop()
	if err := check.Check(nil); err != nil {
		t.Errorf("a second check within maxAge asked the server again: %v", err)
	}
	now = now.Add(time.Minute)
	if err := check.Check(nil); err == nil {
		t.Error("a check after maxAge passed with the server unreachable")
	}
}

// proxy forwards TCP connections to an API server and can be stopped, so
// that the server looks gone (connections refused) without stopping it for
// the package's other tests.
type proxy struct {
	addr, target string

	mu    sync.Mutex
	l     net.Listener
	conns map[net.Conn]bool
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	p := &proxy{addr: "127.0.0.1:0", target: target, conns: map[net.Conn]bool{}}
	p.start(t)
	t.Cleanup(p.stop)
	return p
}

// start listens again on the proxy's address.
func (p *proxy) start(t *testing.T) {
	t.Helper()
	l, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.l, p.addr = l, l.Addr().String()
	p.mu.Unlock()
	go p.serve(l)
}

func (p *proxy) serve(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		go pipe(c, up)
		go pipe(up, c)
	}
}

func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
}

// stop closes the listener and every connection through it.
func (p *proxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l != nil {
		p.l.Close()
		p.l = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

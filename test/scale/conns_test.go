package scale

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestEstablishedTo(t *testing.T) {
	const table = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:5DC0 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1001 1 0000000000000000 100 0 0 10 0
   1: 0100007F:9C40 0100007F:5DC0 01 00000000:00000000 00:00000000 00000000     0        0 1002 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:9C41 0100007F:5DC0 06 00000000:00000000 03:00000F8B 00000000     0        0 0 3 0000000000000000
   3: 0100007F:9C42 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 1004 1 0000000000000000 20 4 30 10 -1
   4: 0100007F:9C43 0100007F:5DC0 01 00000000:00000000 00:00000000 00000000     0        0 1005 1 0000000000000000 20 4 30 10 -1
`
	// 0x5DC0 is 24000: the listener (0A), a connection in TIME_WAIT (06,
	// no inode) and one to port 8080 (0x1F90) are not counted.
	got := establishedTo(strings.NewReader(table), 24000)
	if len(got) != 2 || !got[1002] || !got[1005] {
		t.Errorf("established to 24000: %v, want inodes 1002 and 1005", got)
	}
}

// TestConnSamplerSeesOwnConnection counts this process's one connection to a
// listener, as the benchmark counts kube-scheduler's to kube-apiserver.
func TestConnSamplerSeesOwnConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	s, err := startConnSampler("https://127.0.0.1:"+strconv.Itoa(port), map[string]int{"self": os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	// The sampler takes its first sample at once; close waits for it.
	s.close()
	if got, want := s.report(), "self 1 (1 seen in all)"; got != want {
		t.Errorf("sampled %q, want %q", got, want)
	}
	if _, err := startConnSampler("https://127.0.0.1", nil); err == nil {
		t.Error("an address without a port was taken")
	}
}

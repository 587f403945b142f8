package scale

import (
	"context"
	"os"
	"testing"
)

func TestSummarizeGoroutines(t *testing.T) {
	fixture, err := os.ReadFile("testdata/goroutines.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dump, want string
	}{
		{"a kube-scheduler dump with its groups cut short", string(fixture),
			"goroutines 7390: binding a pod 2705, in a TLS handshake 364, dialing 365"},
		{"no header: the groups' sum", "3 @ 0x1\n#\t0x1\tmain.main+0x1\n\n2 @ 0x2\n#\t0x2\tk8s.io/client-go/kubernetes/typed/core/v1.(*pods).Bind+0x1a4\n",
			"goroutines 5: binding a pod 2, in a TLS handshake 0, dialing 0"},
		{"empty", "", "goroutines 0: binding a pod 0, in a TLS handshake 0, dialing 0"},
	} {
		if got := summarizeGoroutines(tc.dump); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestInBackgroundStopsTheLoop(t *testing.T) {
	ran := make(chan struct{})
	returned := false
	stop := inBackground(func(done <-chan struct{}) {
		close(ran)
		<-done
		returned = true
	})
	<-ran
	if stopped(context.Background(), nil) {
		t.Error("stopped with neither the context ended nor done closed")
	}
	stop()
	if !returned {
		t.Error("stop returned before the loop did")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if !stopped(ctx, nil) {
		t.Error("not stopped with the context ended")
	}
}

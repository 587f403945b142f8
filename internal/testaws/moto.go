// Package testaws runs an EC2 API for tests: moto's server (the Python
// package moto, on every machine we test on), on a free loopback port, one
// per test, stopped when the test ends. Nothing is sent anywhere else.
package testaws

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// Region is the region tests ask moto for.
const Region = "us-east-1"

// Moto is a running moto server.
type Moto struct {
	// Endpoint is its URL, http://127.0.0.1:PORT.
	Endpoint string
}

// Start runs moto_server for the test and waits until it answers. It fails
// the test, never skips it, when moto_server is missing: moto is part of
// every machine we test on.
func Start(t testing.TB) *Moto {
	t.Helper()
	path, err := exec.LookPath("moto_server")
	if err != nil {
		t.Fatalf("moto_server (the Python package moto 5.2.1) is not on PATH: %v", err)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		m, err := start(t, path, port)
		if err == nil {
			return m
		}
		lastErr = err
	}
	t.Fatalf("starting moto_server: %v", lastErr)
	return nil
}

func start(t testing.TB, path string, port int) (*Moto, error) {
	cmd := exec.Command(path, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	log, err := os.CreateTemp(t.TempDir(), "moto-*.log")
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	m := &Moto{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port)}
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-exited:
			out, _ := os.ReadFile(log.Name())
			exited <- err
			return nil, fmt.Errorf("moto_server exited: %v: %s", err, out)
		default:
		}
		if resp, err := http.Get(m.Endpoint + "/moto-api/"); err == nil {
			resp.Body.Close()
			t.Cleanup(stop)
			return m, nil
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("moto_server on port %d did not answer within 60s", port)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Config is an AWS configuration that talks to this moto with test
// credentials, in Region.
func (m *Moto) Config() aws.Config {
	return aws.Config{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider("testing", "testing", ""),
		BaseEndpoint: aws.String(m.Endpoint),
		HTTPClient:   &http.Client{Timeout: 60 * time.Second},
	}
}

// EC2 is an EC2 client of this moto.
func (m *Moto) EC2() *ec2.Client { return ec2.NewFromConfig(m.Config()) }

// Reset forgets every resource moto holds, between subtests.
func (m *Moto) Reset(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.Endpoint+"/moto-api/reset", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("moto reset: %s", resp.Status)
	}
	return nil
}

package scale

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// schedulerCounts is one reading of kube-scheduler's own counters: how many
// times it tried a pod, by result, why it moved pods back to be tried, and
// how many tries each pod it bound took. Two cores make every try count:
// a pod tried before its node can take it costs a scheduling cycle and,
// when the verdict's message changed, a status patch.
type schedulerCounts struct {
	attempts map[string]float64 // scheduler_schedule_attempts_total by result
	incoming map[string]float64 // scheduler_queue_incoming_pods_total by "queue event"
	// scheduler_pod_scheduling_attempts: pods bound and their tries in all.
	boundPods, boundTries float64
}

// schedulerPort is kube-scheduler's secure port, from its command line.
func schedulerPort(pid int) (int, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return 0, err
	}
	for _, arg := range strings.Split(string(data), "\x00") {
		if v, ok := strings.CutPrefix(arg, "--secure-port="); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("kube-scheduler (pid %d) has no --secure-port", pid)
}

// readScheduler scrapes kube-scheduler's metrics on the loopback port the
// dev cluster gave it. kwokctl lets /metrics through without credentials.
func readScheduler(port int) (schedulerCounts, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	data, err := schedulerGet(ctx, port, "/metrics")
	if err != nil {
		return schedulerCounts{}, fmt.Errorf("reading kube-scheduler's metrics: %w", err)
	}
	return parseScheduler(string(data)), nil
}

// loopbackTLS is the client for kube-scheduler's secure port: its serving
// certificate is self-signed, and nothing leaves the machine.
var loopbackTLS = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback, self-signed

// schedulerGet reads path from kube-scheduler's secure port on the loopback,
// a path its authorization-always-allow-paths lets through; a status other
// than 200 is an error.
func schedulerGet(ctx context.Context, port int, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d%s", port, path), nil)
	if err != nil {
		return nil, err
	}
	resp, err := loopbackTLS.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s: %s", path, resp.Status, strings.TrimSpace(string(data)))
	}
	return data, err
}

// parseScheduler picks kube-scheduler's counters out of a metrics page.
func parseScheduler(page string) schedulerCounts {
	out := schedulerCounts{attempts: map[string]float64{}, incoming: map[string]float64{}}
	for _, line := range strings.Split(page, "\n") {
		name, rest, ok := strings.Cut(line, "{")
		labels, value := "", ""
		if ok {
			labels, value, ok = strings.Cut(rest, "} ")
		} else {
			name, value, ok = strings.Cut(line, " ")
		}
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		l := parseLabels(labels)
		switch name {
		case "scheduler_schedule_attempts_total":
			out.attempts[l["result"]] += v
		case "scheduler_queue_incoming_pods_total":
			out.incoming[l["queue"]+" "+l["event"]] += v
		case "scheduler_pod_scheduling_attempts_count":
			out.boundPods += v
		case "scheduler_pod_scheduling_attempts_sum":
			out.boundTries += v
		}
	}
	return out
}

// schedulerSummary says, for a log line, what kube-scheduler did between two
// readings: its tries by result, tries per pod it bound, and the n commonest
// reasons it queued pods again.
func schedulerSummary(before, after schedulerCounts, n int) string {
	var res []string
	for _, k := range sortedKeys(after.attempts) {
		res = append(res, fmt.Sprintf("%s %.0f", k, after.attempts[k]-before.attempts[k]))
	}
	perPod := 0.0
	if pods := after.boundPods - before.boundPods; pods > 0 {
		perPod = (after.boundTries - before.boundTries) / pods
	}
	top, total := topRequests(before.incoming, after.incoming, n)
	return fmt.Sprintf("tries: %s; %.2f tries per pod bound; pods queued %.0f times, most: %s",
		strings.Join(res, ", "), perPod, total, strings.Join(top, ", "))
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

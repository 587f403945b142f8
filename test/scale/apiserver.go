package scale

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
)

// requests is one reading of kube-apiserver's request counters, summed by
// verb, resource and subresource ("PATCH nodeclaims/status"): all of them,
// and those refused with 409 Conflict (a write made from a stale copy, done
// again after a fresh read).
type requests struct {
	all, conflicts map[string]float64
}

// requestCounts reads kube-apiserver's apiserver_request_total, so that a
// run can say which writes loaded the API server. Reads through watches
// (WATCH) count once per watch, not per event.
func requestCounts(ctx context.Context, cs kubernetes.Interface) (requests, error) {
	data, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return requests{}, fmt.Errorf("reading kube-apiserver's metrics: %w", err)
	}
	return parseRequests(string(data)), nil
}

// parseRequests sums the apiserver_request_total lines of a metrics page.
func parseRequests(page string) requests {
	out := requests{all: map[string]float64{}, conflicts: map[string]float64{}}
	for _, line := range strings.Split(page, "\n") {
		rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		l := parseLabels(labels)
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		out.all[key] += v
		if l["code"] == "409" {
			out.conflicts[key] += v
		}
	}
	return out
}

// parseLabels splits a Prometheus label set (a="x",b="y") into a map. Label
// values here hold no quotes or commas.
func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			out[k] = strings.Trim(v, `"`)
		}
	}
	return out
}

// topRequests is the n largest differences between two readings of
// requestCounts, largest first, as "VERB resource/sub count" items, and the
// total of all differences.
func topRequests(before, after map[string]float64, n int) ([]string, float64) {
	type kv struct {
		k string
		v float64
	}
	var diffs []kv
	total := 0.0
	for k, v := range after {
		d := v - before[k]
		if d > 0 {
			diffs = append(diffs, kv{k, d})
			total += d
		}
	}
	sort.Slice(diffs, func(i, j int) bool {
		if diffs[i].v != diffs[j].v {
			return diffs[i].v > diffs[j].v
		}
		return diffs[i].k < diffs[j].k
	})
	var out []string
	for i := 0; i < len(diffs) && i < n; i++ {
		out = append(out, fmt.Sprintf("%s %.0f", diffs[i].k, diffs[i].v))
	}
	return out, total
}

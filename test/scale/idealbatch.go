package scale

import "time"

// idealBatchClose is when an autoscaler batching as Karpenter does (and
// nodewright by default) decides on a pod first seen at podAt, both counted
// from the first pod of a stream: pods that keep coming hold a batch open
// for its whole window (BATCH_MAX_DURATION), so batches close every window
// from the first pod; once the pods stop (lastAt >= 0, the last one's time),
// the open batch closes idle later (BATCH_IDLE_DURATION) if that is sooner.
// It spends nothing on deciding: what remains is the wait the batching
// itself costs.
func idealBatchClose(podAt, lastAt, window, idle time.Duration) time.Duration {
	closeAt := (podAt/window + 1) * window
	if lastAt >= 0 {
		closeAt = min(closeAt, lastAt+idle)
	}
	return closeAt
}

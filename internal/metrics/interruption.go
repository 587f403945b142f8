package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// InterruptionMessages counts the interruption queue's messages by the
	// event they held ("SpotInterruption", ..., "Unparseable").
	InterruptionMessages = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "interruption", Name: "received_messages_total",
		Help: "Number of messages received from the interruption queue, by message type.",
	}, []string{"message_type"})
	// InterruptionActions counts what was done about them.
	InterruptionActions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "interruption", Name: "actions_performed_total",
		Help: "Number of actions taken on interruption messages, by action (CordonAndDrain, NoAction) and message type.",
	}, []string{"action", "message_type"})
	// InterruptionDeleted counts messages deleted from the queue.
	InterruptionDeleted = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "interruption", Name: "deleted_messages_total",
		Help: "Number of messages deleted from the interruption queue.",
	})
)

func init() {
	crmetrics.Registry.MustRegister(InterruptionMessages, InterruptionActions, InterruptionDeleted)
}

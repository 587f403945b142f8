package metrics

var (
	// InterruptionMessages counts the interruption queue's messages by the
	// event they held ("SpotInterruption", ..., "Unparseable").
	InterruptionMessages = newCounterVec(Spec{Name: "karpenter_interruption_received_messages_total",
		Help: "Number of messages received from the interruption queue, by message type.", Labels: []string{"message_type"}})
	// InterruptionActions counts what was done about them. Karpenter v1
	// dropped this counter; it is kept for the action it tells.
	InterruptionActions = newCounterVec(Spec{Name: "karpenter_interruption_actions_performed_total", Ours: true,
		Help:   "Number of actions taken on interruption messages, by action (CordonAndDrain, NoAction) and message type.",
		Labels: []string{"action", "message_type"}})
	// InterruptionDeleted counts messages deleted from the queue.
	InterruptionDeleted = newCounterVec(Spec{Name: "karpenter_interruption_deleted_messages_total",
		Help: "Number of messages deleted from the interruption queue."}).WithLabelValues()
)

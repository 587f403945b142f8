// Package budget decides how many of a NodePool's nodes may begin a
// disruption now, for each disruption reason, from the NodePool's
// spec.disruption.budgets as Karpenter reads them: a count or a percentage of
// the NodePool's nodes (rounded up), optionally active only in the windows a
// UTC cron schedule and a duration open, optionally for some reasons only;
// the lowest active budget wins, and nodes already being disrupted are taken
// off it. Two opt-in annotations of the NodePool go further: reason budgets
// that count only their own disruptions, and a cap on how many disruptions
// may start within a trailing window of time.
//
// It is pure: the caller passes the NodePool, what is being disrupted, when
// recent disruptions started, and the time. A budget that cannot be read is
// treated as allowing nothing and reported as an error, never a panic.
package budget

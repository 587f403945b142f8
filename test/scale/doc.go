// Package scale holds nodewright's end-to-end scale benchmark,
// BenchmarkScale40k: 40,000 pending pods on the local cluster (kwokctl's
// binary runtime with nodewright's CRDs, internal/devenv), the controller
// running as its own process exactly as `nodewright dev up` runs it.
//
// It measures, from the moment the last pod was created:
//
//   - s-to-last-nodeclaim: until the last NodeClaim the controller created, as
//     this process's watch received it (millisecond resolution), up to the end
//     of the run (every pod Running, or NODEWRIGHT_SCALE_WAIT_RUNNING spent);
//   - s-to-all-placed: until every pod was first bound or nominated;
//   - s-sched-tried: until kube-scheduler had given every pod a first verdict
//     (Unschedulable, or a binding);
//   - s-place-p50/p99/max: per pod, from its creation to its nomination or
//     binding, whichever came first;
//   - s-react-p50/p99/max: per pod, from kube-scheduler marking it
//     Unschedulable to its nomination (only pods seen marked before they were
//     nominated: the controller also plans pods the scheduler has not tried
//     --provision-untried-pods-after their creation);
//
// and the controller's peak resident memory (VmHWM), the NodeClaims created,
// the solves it ran (from its log and its metrics endpoint; each listed with
// "close" or "early" and the part-filled NodeClaims it held back while pods
// kept coming, see docs/provisioning.md), how many pods
// were Running then, the CPU each process of the cluster used, and the
// requests kube-apiserver served, by verb and resource (which writes loaded
// it), and what kube-scheduler did (KUBE-SCHEDULER: its tries by result,
// tries per pod it bound, and why it queued pods again, from its own
// metrics), and the most TCP connections each process held to
// kube-apiserver at once (CONNECTIONS, sampled each second: a client with
// more requests in flight than the 100 streams kube-apiserver allows on one
// HTTP/2 connection opens more, each a TLS handshake on both sides). Each
// progress line says the CPU each process used since the line before. It
// then waits for every pod to run, counting the NodeClaims that still
// come: pods kube-scheduler put elsewhere than planned are planned again once
// their nominations lapse.
//
// Then, unless NODEWRIGHT_SCALE_BASELINE=0, it measures the floor: a fresh
// cluster of the same make, the nodes the run ended with created beforehand
// (the same labels and resources, Ready, no taint) and no autoscaler, the same
// pods created the same way, and the time from the last create until every
// pod runs (baseline-s-to-all-running). overhead-ratio is the run's
// s-to-all-running over the baseline's: what the autoscaler adds on top of
// kube-scheduler, kube-apiserver and kwok. The baseline's creates take
// longer (kube-scheduler binds while they go on), so
// overhead-ratio-from-first-create compares the two from the first create
// as well. kube-scheduler fills the plan's nodes in its own order, and a
// few pods may find no room there: the baseline then ends once the others
// run (baseline-unplaced-pods counts them). Both saturate the machine's
// cores, so time from the first create follows CPU spent: cpu-s and
// baseline-cpu-s are the CPU every process used (controller, cluster
// components, the benchmark) from the first create until every pod ran,
// and cpu-ratio says how much of overhead-ratio-from-first-create is work
// added rather than waiting.
//
// With NODEWRIGHT_SCALE_IDEAL=1 it then measures, on a third fresh cluster,
// an ideal reactive autoscaler: the same plan's nodes, each created the
// moment the pods it is for were created (the i-th of n nodes once i/n of
// the pods were), with no controller at all. It knows the plan, decides in
// no time and spends no CPU, but its nodes come after their pods, as every
// autoscaler's must. ideal-ratio-from-first-create and ideal-cpu-ratio
// (over the baseline) are what reacting costs on this machine, whoever
// reacts; over-ideal-ratio-from-first-create and over-ideal-cpu-ratio
// (nodewright's run over the ideal) are nodewright's own part;
// ideal-overhead-ratio is the ideal's ratio after the last create.
// NODEWRIGHT_SCALE_IDEAL_BATCH=10s makes the ideal wait as Karpenter's
// batcher does, with that window and the controller's default idle (1 s):
// each node is created when the batch in which the last of its pods
// appeared closes (every window while pods keep coming, a second after the
// last pod once they stop), so it is an autoscaler with the API's batching
// that spends nothing on deciding.
//
// It is not part of the default test run (the package's tests cover only the
// benchmark's helpers). Run it with, from the repository root:
//
//	make bench-scale         (every instance size)
//	make bench-scale-large   (instance types of 32 vCPUs or more)
//	go test -run '^$' -bench Scale40k -benchtime 1x -timeout 60m ./test/scale/
//
// Progress lines go to stderr as it runs; a run of 40,000 pods takes about 10
// minutes on two cores, with every instance size (about 1,000 nodes) or with
// sizes of 32 vCPUs or more (about 450), most of it kube-apiserver,
// kube-scheduler and kwok.
//
// Knobs, all environment variables:
//
//	NODEWRIGHT_SCALE_PODS             pods to create (default 40000; try 2000 first)
//	NODEWRIGHT_SCALE_WAIT_RUNNING     after measuring, wait this long for every pod
//	                                  to run (Go duration, default 5m a 10,000
//	                                  pods and at least 5m; 0 skips)
//	NODEWRIGHT_SCALE_TIMEOUT          give up measuring after this long (default 20m)
//	NODEWRIGHT_SCALE_SETTLE           quiet window proving no more NodeClaims come
//	                                  (default 15s)
//	NODEWRIGHT_SCALE_MIN_NODE_CPU     allow only instance types of at least this many
//	                                  vCPUs (default 0: all sizes, and the solver
//	                                  chooses; `make bench-scale-large` sets 32)
//	NODEWRIGHT_SCALE_HEARTBEAT_FACTOR stretch kwok's node leases, status updates and
//	                                  the node lifecycle grace period (default 5, kwokctl's
//	                                  own default for large simulations; 1 is a kubelet's
//	                                  timing, which two cores simulating thousands of nodes
//	                                  cannot keep: leases lapse, nodes go NotReady and the
//	                                  taint-eviction controller deletes their pods)
//	NODEWRIGHT_SCALE_GOMEMLIMIT       the controller's GOMEMLIMIT (default 1200MiB, as a
//	                                  deployment with a 1.5 GiB memory limit would set it,
//	                                  Karpenter's chart does the same; empty: none)
//	NODEWRIGHT_SCALE_BASELINE         0 skips the no-autoscaler baseline run
//	NODEWRIGHT_SCALE_IDEAL            1 adds the ideal reactive autoscaler's run
//	                                  (needs the baseline)
//	NODEWRIGHT_SCALE_IDEAL_BATCH      a duration: the ideal creates each node when
//	                                  its pods' batch of that window closes, not at
//	                                  once (see above)
//	NODEWRIGHT_SCALE_CONTROLLER_ARGS  extra `nodewright controller` arguments,
//	                                  space separated
//	NODEWRIGHT_SCALE_WORKDIR          kwok work dir (default: nodewright's cache);
//	                                  /dev/shm takes disk latency out of etcd
//	NODEWRIGHT_SCALE_KEEP_LOG         copy the controller log to this file
//	NODEWRIGHT_SCALE_PPROF            a directory: run the controller from
//	                                  ./test/scale/profiled (the same operator.Run
//	                                  with net/http/pprof) and save 30-second CPU
//	                                  profiles, heap profiles and goroutine dumps
//	                                  there throughout the run
//	NODEWRIGHT_SCALE_APISERVER_PPROF  a directory: save 30-second CPU profiles of
//	                                  kube-apiserver there, from the first pod create
//	                                  to the end of each run, baseline and ideal
//	                                  (runN-cpu-NNN.pb.gz, runN-baseline-..., runN-ideal-...)
//	NODEWRIGHT_SCALE_SCHEDULER_PPROF  a directory: let /debug/pprof through on each
//	                                  cluster's kube-scheduler (one more entry in its
//	                                  authorization-always-allow-paths) and save there,
//	                                  from the first pod create to the end of each run,
//	                                  baseline and ideal, a goroutine dump then a
//	                                  10-second CPU profile, again and again; each dump
//	                                  is logged as how many goroutines bind a pod, shake
//	                                  hands with kube-apiserver or dial it
//	NODEWRIGHT_SCALE_NODE_WAITS       1: with each progress line, what the registered
//	                                  nodes not yet initialized wait for (not Ready,
//	                                  and each taint they carry)
//	NODEWRIGHT_SCALE_APISERVER_FLAGS  extra kube-apiserver flags for the run, the
//	                                  baseline and the ideal, space separated, each
//	                                  name=value (http2-max-streams-per-connection=1000,
//	                                  say); figures taken so are not the default
//	                                  cluster's, and the log says so
//	NODEWRIGHT_SCALE_SCHEDULER_FLAGS  extra kube-scheduler flags, given and checked as
//	                                  the kube-apiserver ones are (kube-api-qps=400
//	                                  kube-api-burst=800, say, a client rate limit in
//	                                  place of kwokctl's unlimited one)
//
// The pods are bare pods (no owner), in namespace "scale", of eight shapes from
// 100m/128Mi to 2/4Gi in equal numbers, created by 64 goroutines through a
// protobuf client allowed 2000 requests a second: the time the last create
// returns is then the benchmark's own, not kube-controller-manager's ReplicaSet
// pacing. The NodePool allows amd64 and arm64, on-demand and spot, of the kwok
// provider's built-in catalog, with no limits and consolidateAfter: Never.
package scale

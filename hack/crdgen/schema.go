package main

import "strings"

// Patterns shared by Karpenter's label and taint validation.
const (
	qualifiedNamePattern = `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
	labelValuePattern    = `^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
)

// Patterns of the AWS provider's kubelet settings: a resource quantity (the
// pattern of resource.Quantity), and an eviction threshold, which is a
// percentage of up to two decimals, a quantity, or empty (the empty
// alternative is Karpenter's, kept so that we accept what it accepts).
const (
	quantity                 = `(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?`
	quantityPattern          = "^" + quantity + "$"
	evictionThresholdPattern = `^((\d{1,2}(\.\d{1,2})?|100(\.0{1,2})?)%||` + quantity + `)$`
)

func validation(rule, message string) map[string]any {
	return map[string]any{"rule": rule, "message": message}
}

var (
	restrictKarpenterDomain = validation(`self in ["karpenter.sh/capacity-type", "karpenter.sh/nodepool"] || !self.find("^([^/]+)").endsWith("karpenter.sh")`, `label domain "karpenter.sh" is restricted`)
	restrictNodePoolLabel   = validation(`self != "karpenter.sh/nodepool"`, `label "karpenter.sh/nodepool" is restricted`)
	restrictHostnameLabel   = validation(`self != "kubernetes.io/hostname"`, `label "kubernetes.io/hostname" is restricted`)
)

// rule sets keywords on the schema nodes whose path ends with suffix, in the CRD
// files whose name starts with prefix ("" for all).
type rule struct {
	prefix, suffix string
	set            map[string]any
	unset          []string
}

func (r rule) applies(file, path string) bool {
	return strings.HasPrefix(file, r.prefix) && strings.HasSuffix(path, r.suffix)
}

func (r rule) apply(s map[string]any) {
	for k, v := range r.set {
		s[k] = v
	}
	for _, k := range r.unset {
		delete(s, k)
	}
}

var rules = []rule{
	// Node selector requirements embed core/v1's type, which carries no markers.
	// Only karpenter.sh's kinds validate them; the AMI requirements in an
	// EC2NodeClass's status are core/v1's type as it is.
	{prefix: "karpenter.sh_", suffix: "requirements[].operator", set: map[string]any{
		"enum": []any{"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"}}},
	// Karpenter puts these on the array itself, where the API server ignores
	// them; we keep them there so that we accept exactly what Karpenter accepts.
	{prefix: "karpenter.sh_", suffix: "requirements[].values", set: map[string]any{"maxLength": 63, "pattern": labelValuePattern}},
	{prefix: "karpenter.sh_nodepools", suffix: "requirements[].key", set: map[string]any{
		"maxLength": 316, "pattern": qualifiedNamePattern,
		"x-kubernetes-validations": []any{restrictKarpenterDomain, restrictNodePoolLabel, restrictHostnameLabel}}},
	{prefix: "karpenter.sh_nodeclaims", suffix: "requirements[].key", set: map[string]any{
		"maxLength": 316, "pattern": qualifiedNamePattern,
		"x-kubernetes-validations": []any{restrictKarpenterDomain, restrictHostnameLabel}}},
	{prefix: "karpenter.sh_nodeoverlays", suffix: "requirements[].key", set: map[string]any{
		"maxLength": 316, "pattern": qualifiedNamePattern,
		"x-kubernetes-validations": []any{restrictKarpenterDomain, restrictHostnameLabel}}},

	// Taints are core/v1's type too.
	{suffix: "aints[].effect", set: map[string]any{"enum": []any{"NoSchedule", "PreferNoSchedule", "NoExecute"}}},
	{suffix: "aints[].key", set: map[string]any{"minLength": 1, "pattern": qualifiedNamePattern}},
	{suffix: "aints[].value", set: map[string]any{"pattern": qualifiedNamePattern}},

	// The values of an EC2NodeClass's kubelet maps: markers cannot reach map
	// values. Reserved resources are quantities; eviction thresholds are
	// quantities or percentages.
	{prefix: "karpenter.k8s.aws_ec2nodeclasses", suffix: ".kubelet.kubeReserved{}", set: map[string]any{"pattern": quantityPattern}},
	{prefix: "karpenter.k8s.aws_ec2nodeclasses", suffix: ".kubelet.systemReserved{}", set: map[string]any{"pattern": quantityPattern}},
	{prefix: "karpenter.k8s.aws_ec2nodeclasses", suffix: ".kubelet.evictionHard{}", set: map[string]any{"pattern": evictionThresholdPattern}},
	{prefix: "karpenter.k8s.aws_ec2nodeclasses", suffix: ".kubelet.evictionSoft{}", set: map[string]any{"pattern": evictionThresholdPattern}},

	// Label values of a NodeClaim template: map values carry no markers.
	{suffix: ".template.metadata.labels{}", set: map[string]any{"maxLength": 63, "pattern": labelValuePattern}},

	// nodewright's addition: refuse budget schedules that are not cron. The
	// length bound keeps the rule's cost within the API server's budget; the
	// longest sensible schedule (every minute listed) is under 200 characters.
	{prefix: "karpenter.sh_nodepools", suffix: ".budgets[].schedule", set: map[string]any{
		"maxLength": 256, "x-kubernetes-validations": []any{cronRule}}},

	// NodeClaim conditions may have an empty reason and message, as Karpenter's do.
	{prefix: "karpenter.sh_nodeclaims", suffix: ".status.conditions[]", set: map[string]any{
		"required": []any{"lastTransitionTime", "status", "type"}}},
	{prefix: "karpenter.sh_nodeclaims", suffix: ".status.conditions[].reason", set: map[string]any{
		"pattern": `^([A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?|)$`}, unset: []string{"minLength"}},
}

// cronRule is nodewright's one addition to NodePool validation: Karpenter's
// pattern for budget schedules lets through strings that no cron parser accepts
// ("61 * * * *"), which then fail at run time; this refuses them at admission.
// It accepts what robfig/cron's standard parser accepts, minus CRON_TZ (budget
// schedules are UTC).
var cronRule = validation(
	"self.matches('^("+
		"@(annually|yearly|monthly|weekly|daily|midnight|hourly)|"+
		cronField(`[0-5]?[0-9]`, false)+`[ \t]+`+
		cronField(`([01]?[0-9]|2[0-3])`, false)+`[ \t]+`+
		cronField(`(0?[1-9]|[12][0-9]|3[01])`, true)+`[ \t]+`+
		cronField(`(0?[1-9]|1[0-2]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))`, false)+`[ \t]+`+
		cronField(`(0?[0-6]|(?i:sun|mon|tue|wed|thu|fri|sat))`, true)+
		")$')",
	"schedule must be a cron expression (UTC) of five fields: minute 0-59, hour 0-23, day of month 1-31, month 1-12 or jan-dec, day of week 0-6 or sun-sat; or one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly",
)

// cronField is the regular expression of one cron field whose single values
// match atom: a comma-separated list of *, values or ranges, each with an
// optional /step; dayField also allows "?".
func cronField(atom string, dayField bool) string {
	item := `([*]|` + atom + `(-` + atom + `)?)(/[0-9]+)?`
	list := item + `(,` + item + `)*`
	if dayField {
		return `([?]|` + list + `)`
	}
	return `(` + list + `)`
}

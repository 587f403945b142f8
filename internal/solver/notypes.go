package solver

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/instancetype"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Limits on what whyNoTypes lists, so that a catalog of hundreds of types
// gives a line a person reads rather than a page.
const (
	// knownShown is how many known values are listed in full; with more,
	// only the nearest few (or an integer range) are.
	knownShown = 8
	// nearestShown is how many of many known values are listed, nearest
	// to the requested ones first.
	nearestShown = 5
	// examplesShown is how many names of matching types or offerings are
	// given as examples.
	examplesShown = 3
)

// whyNoTypes says why none of p's instance types made it into p.types:
// which of the NodePool's requirements (its labels folded in) match no
// instance type on their own, naming the values the catalog does have; or,
// when each matches some, the smallest set of them that together match
// none; or, when types do match, that none has an available offering the
// requirements allow. compilePools only keeps what passes, so this repeats
// its checks one requirement at a time; it runs on the explain path only,
// and once per pool.
func whyNoTypes(p *pool) string {
	if p.whyNoTypes == "" {
		p.whyNoTypes = diagnoseNoTypes(p.reqs, p.np.InstanceTypes)
	}
	return p.whyNoTypes
}

func diagnoseNoTypes(reqs scheduling.Requirements, catalog []*instancetype.InstanceType) string {
	if len(catalog) == 0 {
		return "the NodePool has no instance types to choose from: check its NodeClass"
	}
	keys := reqs.Keys()
	// ok[t][k]: type t meets requirement keys[k] alone. Requirements are
	// met key by key, so a set of them is met when each of its keys is.
	ok := make([][]bool, len(catalog))
	for t, it := range catalog {
		ok[t] = make([]bool, len(keys))
		for k, key := range keys {
			ok[t][k] = it.Requirements.Compatible(scheduling.Requirements{key: reqs[key]}) == nil
		}
	}
	matching := func(set []int) int {
		n := 0
		for t := range catalog {
			all := true
			for _, k := range set {
				all = all && ok[t][k]
			}
			if all {
				n++
			}
		}
		return n
	}

	var culprits []string
	var narrowing []int // keys that rule out at least one type
	for k, key := range keys {
		switch matching([]int{k}) {
		case 0:
			culprits = append(culprits, unmatched(reqs[key], catalog))
		case len(catalog):
		default:
			narrowing = append(narrowing, k)
		}
	}
	if len(culprits) > 0 {
		return strings.Join(culprits, "; ")
	}

	all := make([]int, len(keys))
	for k := range keys {
		all[k] = k
	}
	if matching(all) > 0 {
		return noOffering(reqs, catalog)
	}

	// Each requirement alone matches some type, all together none. Drop
	// requirements one at a time while the rest still match nothing: what
	// is left is a combination to blame from which none can be dropped.
	set := narrowing
	for i := 0; i < len(set); {
		rest := slices.Delete(slices.Clone(set), i, i+1)
		if matching(rest) == 0 {
			set = rest
			continue
		}
		i++
	}
	names, counts := make([]string, len(set)), make([]string, len(set))
	for i, k := range set {
		names[i] = reqs[keys[k]].String()
		counts[i] = strconv.Itoa(matching([]int{k}))
	}
	return fmt.Sprintf("no instance type meets %s together, though each alone matches some (%s instance types)",
		joinAnd(names), joinAnd(counts))
}

// unmatched says that r matches no instance type of the catalog, and what
// the catalog has for its key: a spelling close to a requested value, and
// the known values (all, the nearest, or their range).
func unmatched(r *scheduling.Requirement, catalog []*instancetype.InstanceType) string {
	key := r.Key()
	if !r.Complement() && r.Len() == 0 && r.NodeSelectorRequirement().Operator == corev1.NodeSelectorOpIn {
		// In with no values is what Intersection leaves when the
		// NodePool's requirements (or its labels) for a key disagree.
		return fmt.Sprintf("the NodePool's requirements and labels for %s allow no value together", key)
	}
	seen := map[string]bool{}
	var known []string
	for _, it := range catalog {
		if tr, ok := it.Requirements[key]; ok {
			for _, v := range tr.Values() {
				if !seen[v] {
					seen[v] = true
					known = append(known, v)
				}
			}
		}
	}
	msg := r.String() + " matches no instance type"
	if len(known) == 0 {
		return msg
	}
	integers := sortValues(known)
	var wanted []string
	if !r.Complement() {
		wanted = r.Values()
	}
	var hints []string
	for _, v := range wanted {
		if s := closest(v, known); s != "" {
			hints = append(hints, s+" for "+v)
		}
	}
	if len(hints) == 1 && len(wanted) == 1 {
		hints[0] = strings.TrimSuffix(hints[0], " for "+wanted[0])
	}
	if len(hints) > 0 {
		msg += ": did you mean " + strings.Join(hints, ", ") + "?"
	}
	switch {
	case len(known) <= knownShown:
		return msg + " (known: " + strings.Join(known, ", ") + ")"
	case integers:
		return msg + fmt.Sprintf(" (known: %d values from %s to %s)", len(known), known[0], known[len(known)-1])
	case len(wanted) > 0:
		near := nearest(wanted, known, nearestShown)
		return msg + fmt.Sprintf(" (nearest of %d known: %s, ...)", len(known), strings.Join(near, ", "))
	default:
		return msg + fmt.Sprintf(" (known: %s, ... %d in all)", strings.Join(known[:knownShown], ", "), len(known))
	}
}

// noOffering says why types that meet the requirements still have no
// offering to launch: every allowed one is unavailable, or no zone and
// capacity type the requirements allow go together in one offering.
func noOffering(reqs scheduling.Requirements, catalog []*instancetype.InstanceType) string {
	var names []string
	allowed := false // some offering is allowed, though unavailable
	offered := map[string]bool{}
	for _, it := range catalog {
		if it.Requirements.Compatible(reqs) != nil {
			continue
		}
		names = append(names, it.Name)
		for _, o := range it.Offerings {
			allowed = allowed || o.Allowed(reqs)
			if o.Available {
				offered[o.Zone+"/"+o.CapacityType] = true
			}
		}
	}
	sort.Strings(names)
	msg := fmt.Sprintf("%d instance type(s) meet the requirements (%s), but", len(names), examples(names))
	var limits []string
	for _, key := range []string{corev1.LabelTopologyZone, instancetype.CapacityTypeLabel} {
		if r, ok := reqs[key]; ok {
			limits = append(limits, r.String())
		}
	}
	where := ""
	if len(limits) > 0 {
		where = " allowed by " + joinAnd(limits)
	}
	if allowed {
		return msg + " every offering" + where + " is unavailable now"
	}
	pairs := make([]string, 0, len(offered))
	for p := range offered {
		pairs = append(pairs, p)
	}
	sort.Strings(pairs)
	if len(pairs) == 0 {
		return msg + " none of their offerings is available now"
	}
	if len(limits) == 2 {
		// Each allows some offering, just never the same one.
		where += " together"
	}
	return msg + " none has an offering" + where + " (available zone/capacity type: " + examples(pairs) + ")"
}

// sortValues sorts values numerically when they all are integers, as
// instance CPU and memory labels are, and by string otherwise; it reports
// which.
func sortValues(values []string) bool {
	nums := make(map[string]int64, len(values))
	for _, v := range values {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			sort.Strings(values)
			return false
		}
		nums[v] = n
	}
	sort.Slice(values, func(i, j int) bool { return nums[values[i]] < nums[values[j]] })
	return true
}

// closest is the one known value a typo of v would be: the only one at the
// least edit distance, if that is at most a third of v's length (at least
// one edit). "" when v is known, or nothing is that close, or two values are
// equally close (us-east-1z is as near us-east-1a as us-east-1b).
func closest(v string, known []string) string {
	if slices.Contains(known, v) {
		return ""
	}
	best, bestD, tie := "", max(1, len(v)/3)+1, false
	for _, k := range known {
		switch d := editDistance(v, k); {
		case d < bestD:
			best, bestD, tie = k, d, false
		case d == bestD:
			tie = true
		}
	}
	if tie {
		return ""
	}
	return best
}

// nearest is up to n known values ordered by their edit distance to the
// closest wanted one, then as known is sorted.
func nearest(wanted, known []string, n int) []string {
	dist := make(map[string]int, len(known))
	for _, k := range known {
		d := -1
		for _, w := range wanted {
			if e := editDistance(w, k); d < 0 || e < d {
				d = e
			}
		}
		dist[k] = d
	}
	out := slices.Clone(known)
	sort.SliceStable(out, func(i, j int) bool { return dist[out[i]] < dist[out[j]] })
	return out[:min(n, len(out))]
}

// editDistance is the Levenshtein distance between a and b, in bytes:
// label values are ASCII.
func editDistance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// examples lists the first few names, saying how many more there are.
func examples(names []string) string {
	if len(names) <= examplesShown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:examplesShown], ", "), len(names)-examplesShown)
}

// joinAnd joins "a", "a and b", "a, b and c".
func joinAnd(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

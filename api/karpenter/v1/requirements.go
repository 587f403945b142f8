package v1

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Operators that Karpenter adds to the core node selector operators, for
// requirements on integer-valued labels.
const (
	NodeSelectorOpGte corev1.NodeSelectorOperator = "Gte"
	NodeSelectorOpLte corev1.NodeSelectorOperator = "Lte"
)

// NodeSelectorRequirementWithMinValues is a node selector requirement that may also
// demand flexibility: at least MinValues distinct values of the key among the
// instance types a NodeClaim may launch as.
type NodeSelectorRequirementWithMinValues struct {
	corev1.NodeSelectorRequirement `json:",inline"`
	// MinValues is the least number of distinct values of Key that the instance
	// types chosen for a NodeClaim must span.
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=50
	// +optional
	MinValues *int `json:"minValues,omitempty"`
}

// NodeClassReference names the provider-specific NodeClass object that holds the
// cloud settings of a NodeClaim.
type NodeClassReference struct {
	// Kind of the NodeClass, e.g. KWOKNodeClass.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="kind may not be empty"
	// +required
	Kind string `json:"kind"`
	// Name of the NodeClass.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="name may not be empty"
	// +required
	Name string `json:"name"`
	// Group of the NodeClass, e.g. nodewright.dev. An apiVersion such as
	// "karpenter.k8s.aws/v1" is accepted too (Karpenter's own examples use one) and
	// read as its group.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="group may not be empty"
	// +kubebuilder:validation:Pattern:=`^[^/]*(/[^/]+)?$`
	// +required
	Group string `json:"group"`
}

// GroupKind is the NodeClass's group and kind, with any "/version" suffix of
// Group dropped.
func (r *NodeClassReference) GroupKind() schema.GroupKind {
	group, _, _ := strings.Cut(r.Group, "/")
	return schema.GroupKind{Group: group, Kind: r.Kind}
}

// NillableDuration is a duration that may also be "Never" (nil). It keeps the text
// it was read from, so that writing an object back does not reformat it.
//
// +kubebuilder:validation:Type=string
type NillableDuration struct {
	*time.Duration `json:"-"`
	// Raw is the text this value was decoded from, if any.
	Raw []byte `json:"-"`
}

// Never is the text of a NillableDuration without a duration.
const Never = "Never"

// MustParseNillableDuration parses a duration or "Never" and panics on bad input;
// for constants in code and tests.
func MustParseNillableDuration(s string) NillableDuration {
	var d NillableDuration
	if err := d.UnmarshalJSON([]byte(`"` + s + `"`)); err != nil {
		panic(err)
	}
	return d
}

// UnmarshalJSON reads a duration such as "720h" or the word "Never".
func (d *NillableDuration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"720h\" or \"Never\": %w", err)
	}
	d.Raw = append([]byte(nil), b...)
	if s == Never {
		d.Duration = nil
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: use a Go duration such as \"30s\", \"10m\" or \"720h\", or \"Never\": %w", s, err)
	}
	d.Duration = &v
	return nil
}

// MarshalJSON writes the text the value was read from, or formats it.
func (d NillableDuration) MarshalJSON() ([]byte, error) {
	if d.Raw != nil {
		return d.Raw, nil
	}
	return json.Marshal(d.String())
}

// String formats the duration, or "Never".
func (d NillableDuration) String() string {
	if d.Duration == nil {
		return Never
	}
	return d.Duration.String()
}

// ToUnstructured lets the unstructured converter (server-side apply, fake
// clients) see the same text as JSON does.
func (d NillableDuration) ToUnstructured() interface{} {
	b, _ := d.MarshalJSON()
	var s string
	_ = json.Unmarshal(b, &s)
	return s
}

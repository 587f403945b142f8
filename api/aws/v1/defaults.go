package v1

import "k8s.io/utils/ptr"

// SetDefaults fills in what the CRD defaults when a manifest leaves it out,
// for readers that never pass through an API server (simulate, explain -f):
// instance metadata options with IMDSv2 required and a hop limit of 1.
func SetDefaults(nc *EC2NodeClass) {
	m := nc.Spec.MetadataOptions
	if m == nil {
		m = &MetadataOptions{}
		nc.Spec.MetadataOptions = m
	}
	if m.HTTPEndpoint == nil {
		m.HTTPEndpoint = ptr.To("enabled")
	}
	if m.HTTPProtocolIPv6 == nil {
		m.HTTPProtocolIPv6 = ptr.To("disabled")
	}
	if m.HTTPPutResponseHopLimit == nil {
		m.HTTPPutResponseHopLimit = ptr.To(int64(1))
	}
	if m.HTTPTokens == nil {
		m.HTTPTokens = ptr.To("required")
	}
}

package fieldpath

import "testing"

func TestPaths(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Field("", "spec"), "spec"},
		{Field("spec", "template"), "spec.template"},
		{Index("spec.containers", 1), "spec.containers[1]"},
		{MapKey("requests", "cpu"), "requests.cpu"},
		{MapKey("requests", "nvidia.com/gpu"), "requests[nvidia.com/gpu]"},
		{MapKey("", "cpu"), "cpu"},
		{MapKey("labels", "karpenter.sh/nodepool"), "labels[karpenter.sh/nodepool]"},
		{Bracket("labels", "team"), "labels[team]"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

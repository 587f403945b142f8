package metrics

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestWriteResult(t *testing.T) {
	claims := schema.GroupResource{Group: "karpenter.sh", Resource: "nodeclaims"}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"success", nil, "OK"},
		{"conflict", apierrors.NewConflict(claims, "a", errors.New("changed")), "Conflict"},
		{"not found, wrapped", fmt.Errorf("patching: %w", apierrors.NewNotFound(claims, "a")), "NotFound"},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Group: "karpenter.sh", Kind: "NodeClaim"}, "a", nil), "Invalid"},
		{"a status with a code and no reason", &apierrors.StatusError{ErrStatus: metav1.Status{Code: 422}}, "422"},
		{"no answer", errors.New("dial tcp: connection refused"), "Error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := writeResult(tc.err); got != tc.want {
				t.Errorf("writeResult(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
}

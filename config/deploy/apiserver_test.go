package deploy_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodewright/nodewright/config/deploy"
	"github.com/nodewright/nodewright/config/rbac"
	"github.com/nodewright/nodewright/internal/testcluster"
)

var cluster *testcluster.Cluster

func TestMain(m *testing.M) { testcluster.Main(m, &cluster) }

// TestManifestsAcceptedByAPIServer creates the RBAC and Deployment manifests
// on a real kube-apiserver with strict field validation: a misspelt or
// misplaced field, or an invalid value, fails here, not in a user's cluster.
func TestManifestsAcceptedByAPIServer(t *testing.T) {
	ctx := context.Background()
	c := cluster.Client
	kinds := map[string]bool{}
	for _, doc := range [][]byte{rbac.Manifest, deploy.Manifest} {
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(doc), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			if len(u.Object) == 0 {
				continue
			}
			if err := c.Create(ctx, u, client.FieldValidation("Strict")); err != nil {
				t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
			}
			kinds[u.GetKind()] = true
		}
	}
	for _, k := range []string{"Deployment", "PodDisruptionBudget", "Service", "ServiceAccount"} {
		if !kinds[k] {
			t.Errorf("no %s among the manifests", k)
		}
	}
	// The Deployment runs as the ServiceAccount the RBAC rules are for.
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: "nodewright", Name: "nodewright"}, &d); err != nil {
		t.Fatal(err)
	}
	if got := "system:serviceaccount:" + d.Namespace + ":" + d.Spec.Template.Spec.ServiceAccountName; got != rbac.ServiceAccount {
		t.Errorf("the Deployment runs as %s, the RBAC rules are for %s", got, rbac.ServiceAccount)
	}
}

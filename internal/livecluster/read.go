package livecluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// pageSize bounds each list request, so a large cluster is read in pages
// as kubectl reads it.
const pageSize = 500

// Objects are a cluster's objects of the kinds asked for.
type Objects struct {
	// Docs are the objects as kubectl get -o json prints them (without
	// managedFields, as kubectl leaves them out).
	Docs [][]byte
	// Unserved are the kinds the API server does not serve (their CRD is
	// not installed); the cluster has none of them.
	Unserved []string
}

// Read lists every object of kinds, in every namespace. An unreachable
// API server or refused credentials end it at once; resources the user
// may not list are all named in one error, with the fix.
func Read(ctx context.Context, r client.Reader, t Target, kinds []schema.GroupVersionKind) (*Objects, error) {
	out := &Objects{}
	var forbidden []string
	for _, gvk := range kinds {
		docs, err := list(ctx, r, gvk)
		switch {
		case err == nil:
			out.Docs = append(out.Docs, docs...)
		case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
			out.Unserved = append(out.Unserved, gvk.Kind)
		case apierrors.IsForbidden(err):
			forbidden = append(forbidden, resourceOf(err, gvk))
		case apierrors.IsUnauthorized(err):
			return nil, fmt.Errorf("%s refused the credentials of kubeconfig context %s: %v; log in again or pick another --context", t.Server, t.Context, err)
		default:
			return nil, fmt.Errorf("reading %s from %s: %w; check that the cluster is up and reachable from here, and that --kubeconfig and --context point at it",
				gvk.Kind, t, err)
		}
	}
	if len(forbidden) > 0 {
		sort.Strings(forbidden)
		return nil, fmt.Errorf("reading %s: the user of kubeconfig context %s may not list %s in all namespaces; "+
			"grant get and list on them (a ClusterRole bound to the user), or use a context that may "+
			"(check with kubectl auth can-i list %s --all-namespaces)",
			t, t.Context, strings.Join(forbidden, ", "), forbidden[0])
	}
	return out, nil
}

// list reads one kind page by page, each object as JSON.
func list(ctx context.Context, r client.Reader, gvk schema.GroupVersionKind) ([][]byte, error) {
	var docs [][]byte
	cont := ""
	for {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := r.List(ctx, l, client.Limit(pageSize), client.Continue(cont)); err != nil {
			return nil, err
		}
		for i := range l.Items {
			item := &l.Items[i]
			item.SetGroupVersionKind(gvk)
			unstructured.RemoveNestedField(item.Object, "metadata", "managedFields")
			js, err := json.Marshal(item.Object)
			if err != nil {
				return nil, fmt.Errorf("encoding %s %s: %w", gvk.Kind, item.GetName(), err)
			}
			docs = append(docs, js)
		}
		if cont = l.GetContinue(); cont == "" {
			return docs, nil
		}
	}
}

// resourceOf names the resource a Forbidden error is about, as kubectl
// and RBAC rules spell it (pods, nodepools.karpenter.sh).
func resourceOf(err error, gvk schema.GroupVersionKind) string {
	res := strings.ToLower(gvk.Kind) + "s"
	var s apierrors.APIStatus
	if errors.As(err, &s) && s.Status().Details != nil && s.Status().Details.Kind != "" {
		res = s.Status().Details.Kind
	}
	if gvk.Group != "" {
		res += "." + gvk.Group
	}
	return res
}

package nodeclaim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/rest"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	karpv1alpha1 "github.com/nodewright/nodewright/api/karpenter/v1alpha1"
	"github.com/nodewright/nodewright/internal/controller/nodepool"
)

// TestKubectlColumns: with the lifecycle, NodePool status and NodeOverlay
// status controllers running, `kubectl get nodepools,nodeclaims,nodeoverlays
// -o wide` (server-side printing, as kubectl asks for it) has a value in
// every column for a NodePool, the NodeClaim made for it once its node is
// up, and a NodeOverlay. The one exception is a NodeClaim's Drifted, which
// Karpenter and nodewright leave empty until the claim drifts (the
// condition is removed, not set False). The tables are logged as kubectl
// prints them.
func TestKubectlColumns(t *testing.T) {
	ctx := context.Background()
	runControllers(t, DefaultOptions())
	createClass(t, "kc", 0)
	np := createPool(t, "kc", "kc", "0s", 10)
	price := "+10%"
	weight := int32(5)
	overlay := &karpv1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "kc"}, Spec: karpv1alpha1.NodeOverlaySpec{
		Requirements:    []corev1.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}}},
		PriceAdjustment: &price, Weight: &weight,
		Capacity: corev1.ResourceList{"example.com/license": resource.MustParse("1")}}}
	if err := cluster.Client.Create(ctx, overlay); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Client.Delete(context.Background(), overlay) })

	createClaim(t, np, "kc-1")
	waitClaim(t, "kc-1", "registered", func(nc *karpv1.NodeClaim) bool {
		return meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeRegistered)
	})
	markReady(t, "kc-1")
	waitClaim(t, "kc-1", "Ready", func(nc *karpv1.NodeClaim) bool {
		return meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeReady)
	})
	waitPool(t, "kc", "Ready, one node, NodeRegistrationHealthy True", func(np *karpv1.NodePool) bool {
		return meta.IsStatusConditionTrue(np.Status.Conditions, nodepool.ConditionReady) && np.Status.Nodes != nil && *np.Status.Nodes == 1 &&
			meta.IsStatusConditionTrue(np.Status.Conditions, nodepool.ConditionNodeRegistrationHealthy)
	})

	var out strings.Builder
	now := time.Now()
	for _, r := range []struct {
		gv       schema.GroupVersion
		resource string
		kind     string
		name     string
		empty    map[string]bool // columns left empty on purpose
	}{
		{karpv1.SchemeGroupVersion, "nodepools", "nodepool.karpenter.sh", "kc", nil},
		{karpv1.SchemeGroupVersion, "nodeclaims", "nodeclaim.karpenter.sh", "kc-1", map[string]bool{"Drifted": true}},
		{karpv1alpha1.SchemeGroupVersion, "nodeoverlays", "nodeoverlay.karpenter.sh", "kc", nil},
	} {
		var tab metav1.Table
		testkubeTable(t, r.gv, r.resource, &tab)
		row := rowOf(&tab, r.name)
		if row == nil {
			t.Fatalf("no %s row for %s", r.resource, r.name)
		}
		for i, col := range tab.ColumnDefinitions {
			v := cellText(row.Cells[i], col.Type, now)
			switch {
			case r.empty[col.Name] && v != "<none>":
				t.Errorf("%s %s: column %s = %q, want empty", r.resource, r.name, col.Name, v)
			case !r.empty[col.Name] && (v == "<none>" || v == ""):
				t.Errorf("%s %s: column %s is empty", r.resource, r.name, col.Name)
			}
		}
		if out.Len() > 0 {
			out.WriteString("\n")
		}
		out.WriteString(render(&tab, r.kind, []*metav1.TableRow{row}, now))
	}
	t.Logf("kubectl get nodepools,nodeclaims,nodeoverlays -o wide\n%s", out.String())
}

// testkubeTable asks the API server for a resource's list as kubectl does:
// a Table printed on the server from the CRD's printer columns.
func testkubeTable(t *testing.T, gv schema.GroupVersion, res string, into *metav1.Table) {
	t.Helper()
	cfg := rest.CopyConfig(cluster.Config)
	cfg.GroupVersion = &gv
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(runtime.NewScheme()).WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := rc.Get().Resource(res).SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("listing %s as a table: %v", res, err)
	}
	if err := json.Unmarshal(raw, into); err != nil {
		t.Fatalf("reading the %s table: %v", res, err)
	}
}

// rowOf finds the row of the named object.
func rowOf(tab *metav1.Table, name string) *metav1.TableRow {
	for i := range tab.ColumnDefinitions {
		if tab.ColumnDefinitions[i].Name != "Name" {
			continue
		}
		for j := range tab.Rows {
			if fmt.Sprint(tab.Rows[j].Cells[i]) == name {
				return &tab.Rows[j]
			}
		}
	}
	return nil
}

// cellText is a cell as kubectl prints it: "<none>" for no value, an age
// for a date.
func cellText(cell any, typ string, now time.Time) string {
	if cell == nil {
		return "<none>"
	}
	s := fmt.Sprint(cell)
	if typ == "date" {
		if at, err := time.Parse(time.RFC3339, s); err == nil {
			return duration.HumanDuration(now.Sub(at))
		}
	}
	return s
}

// render prints rows as `kubectl get -o wide` does when several kinds are
// asked for: upper-case headers, names as kind.group/name, aligned columns.
func render(tab *metav1.Table, kind string, rows []*metav1.TableRow, now time.Time) string {
	var b bytes.Buffer
	w := tabwriter.NewWriter(&b, 10, 4, 3, ' ', 0) // kubectl's settings
	var header []string
	for _, c := range tab.ColumnDefinitions {
		header = append(header, strings.ToUpper(c.Name))
	}
	fmt.Fprintln(w, strings.Join(header, "\t"))
	for _, r := range rows {
		var cells []string
		for i, c := range tab.ColumnDefinitions {
			v := cellText(r.Cells[i], c.Type, now)
			if c.Name == "Name" {
				v = kind + "/" + v
			}
			cells = append(cells, v)
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	_ = w.Flush()
	return b.String()
}

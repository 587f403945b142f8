package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// tableAccept asks the API server for its Table rendering, the one kubectl
// get prints, with the CRDs' printer columns.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

// getTable fetches the server-side table of a resource, as `kubectl get
// <resource> -o wide` would show it.
func getTable(ctx context.Context, cfg *rest.Config, group, version, resource string) (*metav1.Table, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &metav1.SchemeGroupVersion
	c.APIPath = "/apis"
	c.NegotiatedSerializer = serializer.NewCodecFactory(runtime.NewScheme()).WithoutConversion()
	rc, err := rest.UnversionedRESTClientFor(c)
	if err != nil {
		return nil, err
	}
	raw, err := rc.Get().AbsPath("/apis", group, version, resource).SetHeader("Accept", tableAccept).
		Param("includeObject", "None").Timeout(10 * time.Second).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing %s as a table: %w", resource, err)
	}
	t := &metav1.Table{}
	if err := json.Unmarshal(raw, t); err != nil {
		return nil, fmt.Errorf("reading the %s table: %w", resource, err)
	}
	return t, nil
}

// writeTable prints a table as kubectl does (wide: every column).
func writeTable(w io.Writer, t *metav1.Table) {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	var head []string
	for _, c := range t.ColumnDefinitions {
		head = append(head, strings.ToUpper(c.Name))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range t.Rows {
		cells := make([]string, len(r.Cells))
		for i, c := range r.Cells {
			cells[i] = fmt.Sprint(c)
			if c == nil {
				cells[i] = "<none>"
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	_ = tw.Flush()
}

// emptyCells names the columns of a table that some row leaves blank.
func emptyCells(t *metav1.Table) []string {
	var out []string
	for i, c := range t.ColumnDefinitions {
		for _, r := range t.Rows {
			if i >= len(r.Cells) || r.Cells[i] == nil || fmt.Sprint(r.Cells[i]) == "" {
				out = append(out, c.Name)
				break
			}
		}
	}
	return out
}

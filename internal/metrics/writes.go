package metrics

import (
	"context"
	"errors"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// apiWrites counts the API writes of each of the controller's loops. The
// API server's own counters say how many NodeClaim status patches there
// were, not whose: several loops write the same objects, and on a busy
// server it is the sum of their writes that costs.
var apiWrites = newCounterVec(Spec{Name: "nodewright_api_writes_total", Ours: true,
	Help: "Number of API write requests the controller made, by the loop that made them (writer), the object's kind " +
		"(with /status, /eviction for a subresource), the verb and the result (OK, or the API status reason such as Conflict).",
	Labels: []string{"writer", "kind", "verb", "result"}})

// CountWrites returns c with every write it makes counted under writer in
// nodewright_api_writes_total. Reads pass through uncounted.
func CountWrites(c client.Client, writer string) client.Client {
	return &countingClient{Client: c, writer: writer}
}

type countingClient struct {
	client.Client
	writer string
}

// count records one write of obj's kind (plus "/"+sub for a subresource).
func (c *countingClient) count(obj runtime.Object, sub, verb string, err error) {
	kind := "Unknown"
	if gvk, gerr := c.GroupVersionKindFor(obj); gerr == nil {
		kind = gvk.Kind
	}
	if sub != "" {
		kind += "/" + sub
	}
	apiWrites.WithLabelValues(c.writer, kind, verb, writeResult(err)).Inc()
}

// writeResult names an outcome by the API status reason, so conflicts and
// not-found answers can be told from other failures; a status without a
// reason is named by its HTTP code, an error that is no API status (a
// timeout, a refused connection) is "Error".
func writeResult(err error) string {
	if err == nil {
		return "OK"
	}
	if r := apierrors.ReasonForError(err); r != metav1.StatusReasonUnknown {
		return string(r)
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Code != 0 {
		return strconv.Itoa(int(st.Status().Code))
	}
	return "Error"
}

func (c *countingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	err := c.Client.Create(ctx, obj, opts...)
	c.count(obj, "", "create", err)
	return err
}

func (c *countingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	err := c.Client.Update(ctx, obj, opts...)
	c.count(obj, "", "update", err)
	return err
}

func (c *countingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	err := c.Client.Patch(ctx, obj, patch, opts...)
	c.count(obj, "", "patch", err)
	return err
}

func (c *countingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	err := c.Client.Delete(ctx, obj, opts...)
	c.count(obj, "", "delete", err)
	return err
}

func (c *countingClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	err := c.Client.DeleteAllOf(ctx, obj, opts...)
	c.count(obj, "", "deletecollection", err)
	return err
}

func (c *countingClient) Status() client.SubResourceWriter {
	return c.SubResource("status")
}

func (c *countingClient) SubResource(sub string) client.SubResourceClient {
	return &countingSubResource{SubResourceClient: c.Client.SubResource(sub), c: c, sub: sub}
}

type countingSubResource struct {
	client.SubResourceClient
	c   *countingClient
	sub string
}

func (s *countingSubResource) Create(ctx context.Context, obj client.Object, subResource client.Object, opts ...client.SubResourceCreateOption) error {
	err := s.SubResourceClient.Create(ctx, obj, subResource, opts...)
	s.c.count(obj, s.sub, "create", err)
	return err
}

func (s *countingSubResource) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	err := s.SubResourceClient.Update(ctx, obj, opts...)
	s.c.count(obj, s.sub, "update", err)
	return err
}

func (s *countingSubResource) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	err := s.SubResourceClient.Patch(ctx, obj, patch, opts...)
	s.c.count(obj, s.sub, "patch", err)
	return err
}

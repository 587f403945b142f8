package crd

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Install creates or updates nodewright's CRDs in a cluster and waits until
// the API server serves them.
func Install(ctx context.Context, cfg *rest.Config) error {
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	crds, err := All()
	if err != nil {
		return err
	}
	for _, want := range crds {
		have := &apiextensionsv1.CustomResourceDefinition{}
		err := c.Get(ctx, client.ObjectKey{Name: want.Name}, have)
		switch {
		case apierrors.IsNotFound(err):
			if err := c.Create(ctx, want.DeepCopy()); err != nil {
				return fmt.Errorf("creating CRD %s: %w", want.Name, err)
			}
		case err != nil:
			return fmt.Errorf("reading CRD %s: %w", want.Name, err)
		default:
			upd := want.DeepCopy()
			upd.ResourceVersion = have.ResourceVersion
			if err := c.Update(ctx, upd); err != nil {
				return fmt.Errorf("updating CRD %s: %w", want.Name, err)
			}
		}
	}
	deadline := time.Now().Add(time.Minute)
	for _, want := range crds {
		for {
			have := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: want.Name}, have); err == nil && established(have) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("CRD %s not established within a minute", want.Name)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func established(c *apiextensionsv1.CustomResourceDefinition) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

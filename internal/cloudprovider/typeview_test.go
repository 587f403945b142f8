package cloudprovider

import (
	"context"
	"testing"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
	"github.com/nodewright/nodewright/internal/instancetype"
)

func TestViewed(t *testing.T) {
	its := []*instancetype.InstanceType{{Name: "a"}, {Name: "b"}}
	changed := &instancetype.InstanceType{Name: "a", Overhead: instancetype.Overhead{VMMemoryPercent: 0.5}}
	cases := []struct {
		name string
		view TypeView
		want []*instancetype.InstanceType
	}{
		{name: "no view", want: its},
		{name: "a view", view: func(_ context.Context, _ *karpv1.NodeClaim, in []*instancetype.InstanceType) []*instancetype.InstanceType {
			return []*instancetype.InstanceType{changed, in[1]}
		}, want: []*instancetype.InstanceType{changed, its[1]}},
		{name: "a view that drops a type is ignored", view: func(_ context.Context, _ *karpv1.NodeClaim, in []*instancetype.InstanceType) []*instancetype.InstanceType {
			return in[:1]
		}, want: its},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Viewed(context.Background(), tc.view, &karpv1.NodeClaim{}, its)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d types, want %d", len(got), len(tc.want))
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("type %d is %p (%s), want %p", i, got[i], got[i].Name, tc.want[i])
				}
			}
		})
	}
}

type viewer struct {
	CloudProvider
	got TypeView
}

func (v *viewer) SetTypeView(tv TypeView) { v.got = tv }

type wrapped struct{ CloudProvider }

func (w wrapped) Unwrap() CloudProvider { return w.CloudProvider }

func TestSetTypeViewLooksThroughDecorators(t *testing.T) {
	inner := &viewer{}
	view := TypeView(func(_ context.Context, _ *karpv1.NodeClaim, its []*instancetype.InstanceType) []*instancetype.InstanceType {
		return its
	})
	if !SetTypeView(wrapped{inner}, view) || inner.got == nil {
		t.Error("the view did not reach the provider behind the decorator")
	}
	if SetTypeView(wrapped{wrapped{}}, view) {
		t.Error("a provider that takes no view was said to take it")
	}
}

package learned

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func memory(q string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(q)}
}

func newClient(t *testing.T) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).Build()
}

// writeEntry sets one key of the ConfigMap as another replica would.
func writeEntry(t *testing.T, c client.Client, typ string, e Entry) {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: ConfigMapName}, cm); err != nil {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: ConfigMapName}, Data: map[string]string{typ: string(b)}}
		if err := c.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		return
	}
	cm.Data[typ] = string(b)
	if err := c.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
}

// TestLoadSeesWhatAnotherReplicaLearned: a standby loads at start, the
// leader learns more, and the standby's Load on election sees it.
func TestLoadSeesWhatAnotherReplicaLearned(t *testing.T) {
	ctx := context.Background()
	c := newClient(t)
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	leader := NewStore(c, "ns")
	if err := leader.Record(ctx, "small", "node-a", memory("3Gi"), t0); err != nil {
		t.Fatal(err)
	}
	standby := NewStore(c, "ns")
	if err := standby.Load(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := leader.Record(ctx, "large", "node-b", memory("15Gi"), t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := leader.Record(ctx, "small", "node-c", memory("2Gi"), t0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, ok := standby.Get("large"); ok {
		t.Fatal("the standby knows of large before loading again")
	}
	if err := standby.Load(ctx, c); err != nil {
		t.Fatal(err)
	}
	for typ, want := range map[string]string{"small": "2Gi", "large": "15Gi"} {
		e, ok := standby.Get(typ)
		if !ok {
			t.Errorf("no entry for %s after loading again", typ)
			continue
		}
		if got := e.Capacity[corev1.ResourceMemory]; got.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("%s: memory %s, want %s", typ, got.String(), want)
		}
	}
}

func TestLoadMerges(t *testing.T) {
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	cases := []struct {
		name      string
		mine      *Entry // in memory before the Load
		persisted *Entry // in the ConfigMap
		want      string // memory after the Load, "" for no entry
	}{
		{"persisted newer wins", &Entry{Capacity: memory("1Gi"), Observed: metav1.NewTime(t0)}, &Entry{Capacity: memory("2Gi"), Observed: metav1.NewTime(t0.Add(time.Minute))}, "2Gi"},
		{"mine newer is kept", &Entry{Capacity: memory("1Gi"), Observed: metav1.NewTime(t0.Add(time.Minute))}, &Entry{Capacity: memory("2Gi"), Observed: metav1.NewTime(t0)}, "1Gi"},
		{"same time: persisted", &Entry{Capacity: memory("1Gi"), Observed: metav1.NewTime(t0)}, &Entry{Capacity: memory("2Gi"), Observed: metav1.NewTime(t0)}, "2Gi"},
		{"removed from the ConfigMap is forgotten", &Entry{Capacity: memory("1Gi"), Observed: metav1.NewTime(t0)}, nil, ""},
		{"recorded while loading is kept", &Entry{Capacity: memory("1Gi"), Observed: metav1.NewTime(time.Now().Add(time.Hour))}, nil, "1Gi"},
		{"new in the ConfigMap", nil, &Entry{Capacity: memory("2Gi"), Observed: metav1.NewTime(t0)}, "2Gi"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t)
			writeEntry(t, c, "other", Entry{Capacity: memory("5Gi"), Observed: metav1.NewTime(t0)})
			if tc.persisted != nil {
				writeEntry(t, c, "typ", *tc.persisted)
			}
			s := NewStore(c, "ns")
			if tc.mine != nil {
				s.entries["typ"] = *tc.mine
			}
			if err := s.Load(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			if _, ok := s.Get("other"); !ok {
				t.Error("the other entry is missing")
			}
			e, ok := s.Get("typ")
			switch {
			case tc.want == "" && ok:
				t.Errorf("entry kept: %v", e.Capacity)
			case tc.want != "" && !ok:
				t.Errorf("no entry, want memory %s", tc.want)
			case ok:
				if got := e.Capacity[corev1.ResourceMemory]; got.Cmp(resource.MustParse(tc.want)) != 0 {
					t.Errorf("memory %s, want %s", got.String(), tc.want)
				}
			}
		})
	}
}

func TestLoadWithoutConfigMapForgets(t *testing.T) {
	c := newClient(t)
	s := NewStore(c, "ns")
	s.entries["typ"] = Entry{Capacity: memory("1Gi"), Observed: metav1.NewTime(time.Now().Add(-time.Hour))}
	if err := s.Load(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if names := s.Names(); len(names) != 0 {
		t.Errorf("entries %v survive a ConfigMap that is gone", names)
	}
}

package drift

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/nodewright/nodewright/api/karpenter/v1"
)

func TestExpired(t *testing.T) {
	created := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name        string
		created     time.Time
		expireAfter string
		now         time.Time
		want        bool
		wantAt      time.Time
	}{
		{"before expiry", created, "720h", created.Add(719 * time.Hour), false, created.Add(720 * time.Hour)},
		{"one nanosecond before expiry", created, "720h", created.Add(720*time.Hour - 1), false, created.Add(720 * time.Hour)},
		{"exactly at expiry", created, "720h", created.Add(720 * time.Hour), true, created.Add(720 * time.Hour)},
		{"after expiry", created, "1h", created.Add(2 * time.Hour), true, created.Add(time.Hour)},
		{"zero expireAfter expires at creation", created, "0s", created, true, created},
		{"Never", created, karpv1.Never, created.Add(100 * 365 * 24 * time.Hour), false, time.Time{}},
		{"not created yet", time.Time{}, "1h", created, false, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &karpv1.NodeClaim{
				ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(tt.created)},
				Spec:       karpv1.NodeClaimSpec{ExpireAfter: karpv1.MustParseNillableDuration(tt.expireAfter)},
			}
			got, at := Expired(c, tt.now)
			if got != tt.want || !at.Equal(tt.wantAt) {
				t.Errorf("Expired = %v, %v; want %v, %v", got, at, tt.want, tt.wantAt)
			}
		})
	}
}

func TestExpiredWithUnsetExpireAfterMeansNever(t *testing.T) {
	c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(time.Unix(0, 0))}}
	if got, at := Expired(c, time.Now()); got || !at.IsZero() {
		t.Errorf("Expired = %v, %v; want false, zero", got, at)
	}
}

package budget

import (
	"reflect"
	"testing"
	"time"
)

func TestStartsRoundTrip(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		in   []time.Time
		want string
	}{
		{name: "none", want: ""},
		{name: "sorted, to the second, once each", in: []time.Time{t0.Add(90 * time.Second), t0.Add(300 * time.Millisecond), t0},
			want: "2026-11-23T12:00:00Z,2026-11-23T12:01:30Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := EncodeStarts(tc.in)
			if got != tc.want {
				t.Fatalf("EncodeStarts = %q, want %q", got, tc.want)
			}
			if back := EncodeStarts(DecodeStarts(got)); back != got {
				t.Errorf("decoded and encoded again: %q, want %q", back, got)
			}
		})
	}
}

func TestDecodeStartsSkipsWhatIsNotATime(t *testing.T) {
	got := DecodeStarts("2026-11-23T12:00:00Z, yesterday ,,2026-11-23T12:05:00Z")
	want := []time.Time{time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), time.Date(2026, 11, 23, 12, 5, 0, 0, time.UTC)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DecodeStarts = %v, want %v", got, want)
	}
}

func TestRateWindow(t *testing.T) {
	for _, tc := range []struct {
		annotations map[string]string
		want        time.Duration
		ok          bool
	}{
		{annotations: nil},
		{annotations: map[string]string{DisruptionRateAnnotation: "3/1h"}, want: time.Hour, ok: true},
		{annotations: map[string]string{DisruptionRateAnnotation: "three an hour"}},
	} {
		got, ok := RateWindow(tc.annotations)
		if got != tc.want || ok != tc.ok {
			t.Errorf("RateWindow(%v) = %v, %v; want %v, %v", tc.annotations, got, ok, tc.want, tc.ok)
		}
	}
}

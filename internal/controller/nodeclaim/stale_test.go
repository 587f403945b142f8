package nodeclaim

import (
	"testing"
	"time"
)

func TestWritesStale(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		wrote   []string // versions written over, in order, a second apart
		read    string
		after   time.Duration // since the last write
		stale   bool
		remains bool // the record survives the read
	}{
		{"nothing written", nil, "5", 0, false, false},
		{"the copy before our write", []string{"5"}, "5", time.Second, true, true},
		{"a copy before an earlier of two writes", []string{"5", "6"}, "5", time.Second, true, true},
		{"the copy our last write made", []string{"5", "6"}, "7", time.Second, false, false},
		{"a copy someone else wrote later", []string{"5"}, "9", time.Second, false, false},
		{"too long ago: trust the cache", []string{"5"}, "5", staleAfterWrite + time.Second, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w writes
			now := t0
			for _, v := range tc.wrote {
				now = now.Add(time.Second)
				w.wrote("a", v, now)
			}
			w.wrote("other", tc.read, now) // another claim's record does not count
			if got := w.stale("a", tc.read, now.Add(tc.after)); got != tc.stale {
				t.Errorf("stale = %v, want %v", got, tc.stale)
			}
			if _, ok := w.m["a"]; ok != tc.remains {
				t.Errorf("record kept = %v, want %v", ok, tc.remains)
			}
		})
	}
	var w writes
	w.wrote("a", "5", t0)
	w.forget("a")
	if w.stale("a", "5", t0) {
		t.Error("a forgotten claim's copy is still stale")
	}
}

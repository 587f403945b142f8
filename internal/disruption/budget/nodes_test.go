package budget

import "testing"

func TestNodesCountsAndRoundsPercentagesUp(t *testing.T) {
	for _, tc := range []struct {
		value string
		total int
		want  int
	}{
		{"5", 10, 5},
		{"0", 10, 0},
		{"20", 3, 20},
		{"10%", 5, 1},
		{"10%", 0, 0},
		{"10%", 10, 1},
		{"10%", 11, 2},
		{"33%", 3, 1},
		{"50%", 3, 2},
		{"0%", 7, 0},
		{"100%", 7, 7},
		{"10%", -3, 0},
	} {
		got, err := Nodes(tc.value, tc.total)
		if err != nil || got != tc.want {
			t.Errorf("Nodes(%q, %d) = %d, %v; want %d", tc.value, tc.total, got, err, tc.want)
		}
	}
}

func TestNodesRefusesWhatTheCRDRefuses(t *testing.T) {
	for _, value := range []string{"", "-1", "+1", "abc", "1.5", "10 %", "%", "101%", " 5", "99999999999999999999"} {
		if got, err := Nodes(value, 10); err == nil || got != 0 {
			t.Errorf("Nodes(%q) = %d, %v; want 0 and an error", value, got, err)
		}
	}
}

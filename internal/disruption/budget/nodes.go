package budget

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Nodes is how many of total nodes a budget's nodes value allows: a count
// ("5"), or a percentage ("10%") of total rounded up, as Karpenter rounds it,
// so that 10% of 5 nodes still lets one go.
func Nodes(value string, total int) (int, error) {
	total = max(total, 0)
	if p, ok := strings.CutSuffix(value, "%"); ok {
		v, err := digits(p)
		if err != nil {
			return 0, fmt.Errorf("want a percentage such as \"10%%\": %w", err)
		}
		if v > 100 {
			return 0, errors.New("a percentage may be at most 100%")
		}
		return (total*v + 99) / 100, nil
	}
	v, err := digits(value)
	if err != nil {
		return 0, fmt.Errorf("want a count such as \"5\" or a percentage such as \"10%%\": %w", err)
	}
	return v, nil
}

// digits reads a non-negative decimal integer with no sign or spaces, which
// is all the CRD's pattern lets through.
func digits(s string) (int, error) {
	if s == "" {
		return 0, errors.New("no digits")
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, fmt.Errorf("%q is not a digit", r)
		}
	}
	return strconv.Atoi(s)
}

package attach

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// MaxRanges is how many separate ranges a selection may have (the
// injection library's limit).
const MaxRanges = 64

// Selection is a set of matching-launch indices: "3", "0,2,5", "2-7",
// "4-" (from 4 on) or "all". The zero Selection holds launch 0 only.
type Selection struct {
	ranges [][2]uint64
}

// ParseSelection parses the --launch syntax.
func ParseSelection(s string) (Selection, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Selection{}, nil
	}
	if s == "all" {
		return Selection{ranges: [][2]uint64{{0, math.MaxUint64}}}, nil
	}
	var sel Selection
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseUint(lo, 10, 64)
		if err != nil {
			return Selection{}, fmt.Errorf("launch selection %q: %q is not an index, a range A-B or A-, or all", s, part)
		}
		b := a
		if isRange {
			if hi == "" {
				b = math.MaxUint64
			} else if b, err = strconv.ParseUint(hi, 10, 64); err != nil || b < a {
				return Selection{}, fmt.Errorf("launch selection %q: %q is not a range A-B with A <= B", s, part)
			}
		}
		sel.ranges = append(sel.ranges, [2]uint64{a, b})
	}
	sort.Slice(sel.ranges, func(i, j int) bool { return sel.ranges[i][0] < sel.ranges[j][0] })
	merged := sel.ranges[:1]
	for _, r := range sel.ranges[1:] {
		last := &merged[len(merged)-1]
		if r[0] <= last[1] || (last[1] != math.MaxUint64 && r[0] == last[1]+1) {
			last[1] = max(last[1], r[1])
			continue
		}
		merged = append(merged, r)
	}
	sel.ranges = merged
	if len(sel.ranges) > MaxRanges {
		return Selection{}, fmt.Errorf("launch selection %q: %d separate ranges, at most %d (join them into ranges)", s, len(sel.ranges), MaxRanges)
	}
	return sel, nil
}

// Contains reports whether matching launch i is selected.
func (s Selection) Contains(i uint64) bool {
	if len(s.ranges) == 0 {
		return i == 0
	}
	for _, r := range s.ranges {
		if i >= r[0] && i <= r[1] {
			return true
		}
	}
	return false
}

// env is the selection as IKET_LAUNCHES gives it to the library.
func (s Selection) env() string {
	if len(s.ranges) == 0 {
		return "0-0"
	}
	parts := make([]string, len(s.ranges))
	for i, r := range s.ranges {
		if r[1] == math.MaxUint64 {
			parts[i] = fmt.Sprintf("%d-", r[0])
		} else {
			parts[i] = fmt.Sprintf("%d-%d", r[0], r[1])
		}
	}
	return strings.Join(parts, ",")
}

// String is the selection in the --launch syntax.
func (s Selection) String() string {
	if len(s.ranges) == 0 {
		return "0"
	}
	if len(s.ranges) == 1 && s.ranges[0] == [2]uint64{0, math.MaxUint64} {
		return "all"
	}
	return s.env()
}

package trace

import "fmt"

// Validate decodes every warp of l and returns the pass's [Summary] and its
// problems: nil when the launch is clean, otherwise the errors.Join of every
// [Violation] and [WarpError] (at most 100, then one error saying how many
// more). With opt.Strict, drops and warps that did not finish are violations
// too. An error that stops the pass (the launch cannot be indexed or read) is
// returned alone.
func Validate(l *Launch, opt Options) (Summary, error) {
	d, err := NewDecoder(l, opt)
	if err != nil {
		return Summary{}, fmt.Errorf("validate: %w", err)
	}
	if err := d.Each(func(*Warp) error { return nil }, nil); err != nil {
		return d.Summary(), fmt.Errorf("validate: %w", err)
	}
	return d.Summary(), d.Err()
}

package builtin

import (
	"fmt"
	"sort"

	"github.com/iket-trace/iket/iket"
	"github.com/iket-trace/iket/kernels"
)

var programs = map[string]*iket.Program{}

// register adds p, whose kernel is kernels/examples/<file>.
func register(p *iket.Program, file string) {
	p.Source = func() (iket.Source, error) {
		data, err := kernels.Example(file)
		if err != nil {
			return iket.Source{}, fmt.Errorf("program %s: %w", p.Name, err)
		}
		return iket.Source{Path: file, Kind: iket.KindCU, Data: data}, nil
	}
	programs[p.Name] = p
}

// Lookup returns the built-in program name; the error lists the names
// there are.
func Lookup(name string) (*iket.Program, error) {
	if p, ok := programs[name]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("no built-in program %q (have %v)", name, Names())
}

// Programs returns the built-in programs sorted by name, in a new slice.
func Programs() []*iket.Program {
	out := make([]*iket.Program, 0, len(programs))
	for _, p := range programs {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Names returns the built-in programs' names, sorted.
func Names() []string {
	names := make([]string, 0, len(programs))
	for n := range programs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

package check

import (
	"errors"
	"fmt"
	"io"

	"gopkg.in/yaml.v3"
)

// LoadError is a rules file problem, with where it is.
type LoadError struct {
	File string
	Line int // 1-based; 0 when not about one line
	Rule int // 1-based index in rules, 0 when not about one rule
	Err  error
}

func (e *LoadError) Error() string {
	s := e.File
	if e.Line > 0 {
		s += fmt.Sprintf(":%d", e.Line)
	}
	if e.Rule > 0 {
		s += fmt.Sprintf(": rule %d", e.Rule)
	}
	return s + ": " + e.Err.Error()
}

func (e *LoadError) Unwrap() error { return e.Err }

// LoadRules reads a YAML rules file; name is used in errors and in each
// rule's Where. The document is
//
//	rules:
//	  - expect: overlap(producer_load, consumer_compute) >= 0.6
//	    name: pipeline overlaps     # optional
//	    description: ...            # optional
//
// Unknown keys, a rule without expect, and an expect that does not parse
// are errors ([*LoadError], wrapping the [*SyntaxError] for the last).
func LoadRules(r io.Reader, name string) ([]Rule, error) {
	var doc yaml.Node
	if err := yaml.NewDecoder(r).Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &LoadError{File: name, Err: errors.New("empty rules file: want a mapping with a rules list")}
		}
		return nil, &LoadError{File: name, Err: fmt.Errorf("parse yaml: %w", err)}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, &LoadError{File: name, Line: root.Line, Err: errors.New("expected a mapping with a rules list")}
	}
	var list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value != "rules" {
			return nil, &LoadError{File: name, Line: k.Line, Err: fmt.Errorf("unknown key %q: want rules", k.Value)}
		}
		list = v
	}
	if list == nil {
		return nil, &LoadError{File: name, Line: root.Line, Err: errors.New("no rules key")}
	}
	if list.Kind != yaml.SequenceNode {
		return nil, &LoadError{File: name, Line: list.Line, Err: errors.New("rules must be a list")}
	}
	var rules []Rule
	for i, item := range list.Content {
		n := i + 1
		if item.Kind != yaml.MappingNode {
			return nil, &LoadError{File: name, Line: item.Line, Rule: n, Err: errors.New("expected a mapping with expect, name, description")}
		}
		var expect, rname, desc *yaml.Node
		for j := 0; j+1 < len(item.Content); j += 2 {
			k, v := item.Content[j], item.Content[j+1]
			var dst **yaml.Node
			switch k.Value {
			case "expect":
				dst = &expect
			case "name":
				dst = &rname
			case "description":
				dst = &desc
			default:
				return nil, &LoadError{File: name, Line: k.Line, Rule: n, Err: fmt.Errorf("unknown key %q: want expect, name or description", k.Value)}
			}
			if v.Kind != yaml.ScalarNode {
				return nil, &LoadError{File: name, Line: v.Line, Rule: n, Err: fmt.Errorf("%s must be a string", k.Value)}
			}
			*dst = v
		}
		if expect == nil || expect.Value == "" {
			return nil, &LoadError{File: name, Line: item.Line, Rule: n, Err: errors.New("missing expect")}
		}
		rule, err := ParseExpr(expect.Value)
		if err != nil {
			return nil, &LoadError{File: name, Line: expect.Line, Rule: n, Err: fmt.Errorf("expect %q: %w", expect.Value, err)}
		}
		if rname != nil {
			rule.Name = rname.Value
		}
		if desc != nil {
			rule.Description = desc.Value
		}
		rule.Where = fmt.Sprintf("%s:%d", name, expect.Line)
		rules = append(rules, rule)
	}
	if len(rules) == 0 {
		return nil, &LoadError{File: name, Line: list.Line, Err: errors.New("rules list is empty")}
	}
	return rules, nil
}

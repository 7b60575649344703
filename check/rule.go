package check

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind is what a rule checks.
type Kind int

// Rule kinds.
const (
	KindStrict        Kind = iota + 1 // strict
	KindNoDrops                       // no_drops
	KindOverlap                       // overlap(a, b) OP ratio
	KindOverlapMinCTA                 // overlap_min_cta(a, b) OP ratio
	KindDuration                      // p50|p90|p99|mean|min|max(a[, role=r]) OP duration
	KindCount                         // count(a[, role=r]) OP n
	KindBefore                        // before(a, b)
	KindLatencyRatio                  // latency_ratio OP ratio
	KindLag                           // p50|p90|p99|mean|min|max(lag(a, b)) OP duration
	KindBubble                        // bubble(a, b) OP ratio
	KindDormantRatio                  // dormant_ratio OP ratio
	KindControlRatio                  // control_ratio OP ratio
)

var kindNames = [...]string{"", "strict", "no_drops", "overlap", "overlap_min_cta", "duration", "count", "before", "latency_ratio", "lag", "bubble", "dormant_ratio", "control_ratio"}

// latency reports whether k is a rule over the capture's latency
// comparison (latency_ratio, dormant_ratio, control_ratio), which needs no
// analysis.
func (k Kind) latency() bool {
	return k == KindLatencyRatio || k == KindDormantRatio || k == KindControlRatio
}

func (k Kind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Op is a comparison.
type Op string

// Comparisons.
const (
	OpGE Op = ">="
	OpLE Op = "<="
	OpGT Op = ">"
	OpLT Op = "<"
	OpEQ Op = "=="
	OpNE Op = "!="
)

// Holds reports whether v Op bound.
func (o Op) Holds(v, bound float64) bool {
	switch o {
	case OpGE:
		return v >= bound
	case OpLE:
		return v <= bound
	case OpGT:
		return v > bound
	case OpLT:
		return v < bound
	case OpEQ:
		return v == bound
	case OpNE:
		return v != bound
	}
	return false
}

// Rule is one parsed rule.
type Rule struct {
	Expr        string `json:"expr"` // the text as written
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	// Where is where the rule came from ("checks.yaml:4"), "" for ParseExpr.
	Where string `json:"where,omitempty"`

	Kind Kind   `json:"-"`
	Func string `json:"-"` // the function or keyword: "p99", "overlap", ...
	// Args are the series, "range" or "role:range" (one or two; the two of
	// lag(a, b) for KindLag).
	Args []string `json:"-"`
	Role string   `json:"-"` // role=..., "" for none
	Op   Op       `json:"-"`
	// Bound is in ns for durations and as a fraction for ratios written
	// with %. With Baseline it is unset: the bound is Factor times the same
	// measure on the baseline capture.
	Bound    float64 `json:"-"`
	Baseline bool    `json:"-"`
	Factor   float64 `json:"-"`
}

// Title is the rule's name, or its expression when it has none.
func (r *Rule) Title() string {
	if r.Name != "" {
		return r.Name
	}
	return r.Expr
}

// SyntaxError is a rule that does not parse. Col is the 1-based byte column
// in Expr of the problem.
type SyntaxError struct {
	Expr string
	Col  int
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("column %d: %s", e.Col, e.Msg) }

// durationFuncs maps the duration functions to nothing; presence is what
// matters.
var durationFuncs = map[string]bool{"p50": true, "p90": true, "p99": true, "mean": true, "min": true, "max": true}

// token kinds
const (
	tEOF = iota
	tIdent
	tNumber // number with its unit suffix, if any
	tOp
	tPunct // ( ) , = *
	tBad
)

type token struct {
	kind int
	text string
	col  int // 1-based
}

func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "end of rule"
	case tBad:
		return fmt.Sprintf("unexpected character %q", t.text)
	}
	return strconv.Quote(t.text)
}

func lex(s string) []token {
	var ts []token
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case isIdentStart(c):
			j := i
			for j < len(s) && (isIdent(s[j]) || s[j] == ':' && j+1 < len(s) && isIdentStart(s[j+1])) {
				j++
			}
			ts = append(ts, token{tIdent, s[i:j], i + 1})
			i = j
		case c >= '0' && c <= '9' || c == '.' || c == '-' || c == '+':
			j := i + 1
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' ||
				(s[j] == 'e' || s[j] == 'E') && j+1 < len(s) && (s[j+1] >= '0' && s[j+1] <= '9' || s[j+1] == '-' || s[j+1] == '+') ||
				(s[j] == '-' || s[j] == '+') && (s[j-1] == 'e' || s[j-1] == 'E')) {
				j++
			}
			for j < len(s) && (isIdent(s[j]) || s[j] == '%') {
				j++
			}
			if strings.HasPrefix(s[j:], "µs") {
				j += len("µs")
			}
			ts = append(ts, token{tNumber, s[i:j], i + 1})
			i = j
		case c == '>' || c == '<' || c == '=' || c == '!':
			if i+1 < len(s) && s[i+1] == '=' {
				ts = append(ts, token{tOp, s[i : i+2], i + 1})
				i += 2
				continue
			}
			switch c {
			case '>', '<':
				ts = append(ts, token{tOp, s[i : i+1], i + 1})
			case '=':
				ts = append(ts, token{tPunct, "=", i + 1})
			default:
				ts = append(ts, token{tBad, "!", i + 1})
			}
			i++
		case c == '(' || c == ')' || c == ',' || c == '*':
			ts = append(ts, token{tPunct, s[i : i+1], i + 1})
			i++
		default:
			r := []rune(s[i:])[0]
			ts = append(ts, token{tBad, string(r), i + 1})
			i += len(string(r))
		}
	}
	return append(ts, token{tEOF, "", len(s) + 1})
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdent(c byte) bool      { return isIdentStart(c) || c >= '0' && c <= '9' }

type parser struct {
	expr string
	ts   []token
	i    int
}

func (p *parser) peek() token { return p.ts[p.i] }
func (p *parser) next() token {
	t := p.ts[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) errAt(t token, format string, a ...any) error {
	return &SyntaxError{Expr: p.expr, Col: t.col, Msg: fmt.Sprintf(format, a...)}
}

// ruleHeads are the words a rule can start with, as the parse errors list
// them.
var ruleHeads = []string{"strict", "no_drops", "overlap", "overlap_min_cta", "bubble", "p50", "p90", "p99", "mean", "min", "max", "count", "before", "latency_ratio", "dormant_ratio", "control_ratio"}

// headKind is the kind of the rule that starts with word (a duration
// function for KindDuration, a kind's own name for the others but duration
// and lag, which no rule starts with), or 0.
func headKind(word string) Kind {
	if durationFuncs[word] {
		return KindDuration
	}
	for k := KindStrict; int(k) < len(kindNames); k++ {
		if k != KindDuration && k != KindLag && kindNames[k] == word {
			return k
		}
	}
	return 0
}

// ParseExpr parses one rule (see the package doc and docs/CI.md). Errors are
// [*SyntaxError] values naming the column and what was expected there.
func ParseExpr(s string) (Rule, error) {
	p := &parser{expr: s, ts: lex(s)}
	r := Rule{Expr: strings.TrimSpace(s)}
	head := p.next()
	if head.kind != tIdent {
		return Rule{}, p.errAt(head, "expected a rule (%s), found %v", strings.Join(ruleHeads, ", "), head)
	}
	r.Func = head.text
	if r.Kind = headKind(head.text); r.Kind == 0 {
		last := len(ruleHeads) - 1
		return Rule{}, p.errAt(head, "unknown rule %q: want %s or %s", head.text, strings.Join(ruleHeads[:last], ", "), ruleHeads[last])
	}
	if err := p.args(&r, head); err != nil {
		return Rule{}, err
	}
	switch r.Kind {
	case KindStrict, KindNoDrops, KindBefore:
		if t := p.peek(); t.kind != tEOF {
			return Rule{}, p.errAt(t, "expected end of rule after %s (it takes no comparison), found %v", r.Func, t)
		}
		return r, nil
	}
	opTok := p.next()
	if opTok.kind != tOp {
		return Rule{}, p.errAt(opTok, "expected a comparison (>=, <=, >, <, ==, !=) after %s, found %v", r.Func, opTok)
	}
	r.Op = Op(opTok.text)
	if r.Kind == KindCount && r.Role != "" && r.Op == OpNE {
		return Rule{}, p.errAt(opTok, "count with role= applies to every warp of the role: use ==, >=, >, <= or <, not !=")
	}
	val := p.next()
	if val.kind == tIdent && val.text == "baseline" { // OP baseline
		r.Baseline, r.Factor = true, 1
	} else if val.kind != tNumber {
		return Rule{}, p.errAt(val, "expected a number or baseline after %s, found %v", r.Op, val)
	} else if t := p.peek(); t.kind == tPunct && t.text == "*" { // OP F * baseline
		p.next()
		f, err := strconv.ParseFloat(val.text, 64)
		if err != nil || f < 0 {
			return Rule{}, p.errAt(val, "expected a plain factor >= 0 before * baseline, found %q", val.text)
		}
		if b := p.next(); b.kind != tIdent || b.text != "baseline" {
			return Rule{}, p.errAt(b, "expected baseline after %s *, found %v", val.text, b)
		}
		r.Baseline, r.Factor = true, f
		val = p.ts[p.i-1]
	} else {
		b, err := p.bound(&r, val)
		if err != nil {
			return Rule{}, err
		}
		r.Bound = b
	}
	if t := p.peek(); t.kind != tEOF {
		return Rule{}, p.errAt(t, "expected end of rule after %s, found %v", val.text, t)
	}
	return r, nil
}

// args parses the parenthesised arguments, which strict, no_drops,
// latency_ratio, dormant_ratio and control_ratio may omit.
func (p *parser) args(r *Rule, head token) error {
	want := 1 // range names
	switch r.Kind {
	case KindStrict, KindNoDrops, KindLatencyRatio, KindDormantRatio, KindControlRatio:
		want = 0
	case KindOverlap, KindOverlapMinCTA, KindBefore, KindBubble:
		want = 2
	}
	open := p.peek()
	if open.kind != tPunct || open.text != "(" {
		if want == 0 {
			return nil
		}
		return p.errAt(open, "expected '(' after %s, found %v", r.Func, open)
	}
	p.next()
	if want == 0 {
		if t := p.next(); t.kind != tPunct || t.text != ")" {
			return p.errAt(t, "%s takes no arguments: expected ')', found %v", r.Func, t)
		}
		return nil
	}
	if t := p.peek(); r.Kind == KindDuration && t.kind == tIdent && t.text == "lag" {
		return p.lagArgs(r)
	}
	for {
		t := p.next()
		if t.kind != tIdent {
			return p.errAt(t, "expected a range name, found %v", t)
		}
		if eq := p.peek(); eq.kind == tPunct && eq.text == "=" {
			p.next()
			if t.text != "role" {
				return p.errAt(t, "unknown option %q: only role= is accepted", t.text)
			}
			if r.Kind != KindDuration && r.Kind != KindCount {
				return p.errAt(t, "%s does not take role=", r.Func)
			}
			if r.Role != "" {
				return p.errAt(t, "role= given twice")
			}
			v := p.next()
			if v.kind != tIdent {
				return p.errAt(v, "expected a role name after role=, found %v", v)
			}
			r.Role = v.text
		} else {
			if r.Role != "" {
				return p.errAt(t, "expected ')' after role=%s, found %v", r.Role, t)
			}
			if len(r.Args) == want {
				return p.errAt(t, "%s takes %d range name(s), found another: %v", r.Func, want, t)
			}
			r.Args = append(r.Args, t.text)
		}
		sep := p.next()
		if sep.kind == tPunct && sep.text == ")" {
			break
		}
		if sep.kind != tPunct || sep.text != "," {
			return p.errAt(sep, "expected ',' or ')' after %v, found %v", t, sep)
		}
	}
	if len(r.Args) != want {
		return p.errAt(head, "%s takes %d range name(s), found %d", r.Func, want, len(r.Args))
	}
	return nil
}

// lagArgs parses "lag(a, b))" after a duration function's '(' and makes r
// a KindLag rule.
func (p *parser) lagArgs(r *Rule) error {
	p.next() // lag
	if t := p.next(); t.kind != tPunct || t.text != "(" {
		return p.errAt(t, "expected '(' after lag, found %v", t)
	}
	for i := 0; i < 2; i++ {
		t := p.next()
		if t.kind != tIdent {
			return p.errAt(t, "expected a range name, found %v", t)
		}
		r.Args = append(r.Args, t.text)
		sep := p.next()
		want := ","
		if i == 1 {
			want = ")"
		}
		if sep.kind != tPunct || sep.text != want {
			return p.errAt(sep, "lag takes 2 range names: expected '%s' after %v, found %v", want, t, sep)
		}
	}
	if t := p.next(); t.kind != tPunct || t.text != ")" {
		return p.errAt(t, "expected ')' after lag(...), found %v", t)
	}
	r.Kind = KindLag
	return nil
}

var durationUnits = map[string]float64{"ns": 1, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}

// bound parses the number and checks its unit against the rule kind.
func (p *parser) bound(r *Rule, t token) (float64, error) {
	i := 0
	// No unit starts with e or E, so an e belongs to the number's exponent.
	for i < len(t.text) && (t.text[i] >= '0' && t.text[i] <= '9' || strings.IndexByte(".-+eE", t.text[i]) >= 0) {
		i++
	}
	num, unit := t.text[:i], t.text[i:]
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, p.errAt(t, "%q is not a number", num)
	}
	unitTok := token{col: t.col + i}
	switch r.Kind {
	case KindDuration, KindLag:
		m, ok := durationUnits[unit]
		if !ok {
			if unit == "" {
				return 0, p.errAt(unitTok, "expected a duration unit (ns, us, ms, s) after %s", num)
			}
			return 0, p.errAt(unitTok, "unknown duration unit %q: want ns, us, ms or s", unit)
		}
		if v < 0 && r.Kind == KindDuration {
			return 0, p.errAt(t, "a duration bound cannot be negative")
		}
		return v * m, nil
	case KindCount:
		if unit != "" {
			return 0, p.errAt(unitTok, "count takes a plain number, found unit %q", unit)
		}
		if v < 0 || v != float64(int64(v)) {
			return 0, p.errAt(t, "count takes a whole number >= 0, found %s", num)
		}
		return v, nil
	default: // ratios
		switch unit {
		case "":
			return v, nil
		case "%":
			return v / 100, nil
		}
		return 0, p.errAt(unitTok, "%s takes a plain ratio or a percentage, found unit %q", r.Func, unit)
	}
}

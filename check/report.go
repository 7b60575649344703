package check

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/iket-trace/iket/internal/safe"
)

// FormatValue prints a result's value or bound in the rule's unit.
func FormatValue(r *Rule, v float64) string {
	switch r.Kind {
	case KindDuration, KindLag:
		return FormatNs(v)
	case KindStrict, KindNoDrops, KindCount, KindBefore:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}

// Failed counts the results that did not pass.
func Failed(rs []Result) int {
	n := 0
	for _, r := range rs {
		if !r.Pass {
			n++
		}
	}
	return n
}

// WriteTable writes one line per result (status, rule, value, message) and
// the worst offender of each failure indented below it, then a summary.
func WriteTable(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STATUS\tRULE\tVALUE\tDETAIL")
	for i := range rs {
		r := &rs[i]
		status := "PASS"
		if !r.Pass {
			status = "FAIL"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", status, safe.Name(r.Rule.Title()), FormatValue(&r.Rule, r.Value), safe.Name(r.Message))
		if !r.Pass && r.Worst != "" {
			fmt.Fprintf(tw, "\t\t\tworst: %s\n", safe.Name(r.Worst))
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write check table: %w", err)
	}
	if _, err := fmt.Fprintf(w, "%d of %d rules passed\n", len(rs)-Failed(rs), len(rs)); err != nil {
		return fmt.Errorf("write check table: %w", err)
	}
	return nil
}

// jsonReport is the JSON document of WriteJSON.
type jsonReport struct {
	Pass    bool     `json:"pass"`
	Passed  int      `json:"passed"`
	Failed  int      `json:"failed"`
	Results []Result `json:"results"`
}

// WriteJSON writes {"pass", "passed", "failed", "results": [...]}, indented.
func WriteJSON(w io.Writer, rs []Result) error {
	if rs == nil {
		rs = []Result{}
	}
	f := Failed(rs)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(jsonReport{Pass: f == 0, Passed: len(rs) - f, Failed: f, Results: rs}); err != nil {
		return fmt.Errorf("write check json: %w", err)
	}
	return nil
}

// JUnit XML (the subset CI systems read).
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",chardata"`
}

// WriteJUnit writes the results as a JUnit XML report: one testsuite named
// suite, one testcase per rule (named by its title, classname "iket.check.KIND"),
// a failure element for each rule that failed.
func WriteJUnit(w io.Writer, suite string, rs []Result) error {
	s := junitSuite{Name: suite, Tests: len(rs), Failures: Failed(rs)}
	for i := range rs {
		r := &rs[i]
		c := junitCase{Name: r.Rule.Title(), Classname: "iket.check." + r.Rule.Kind.String()}
		detail := fmt.Sprintf("%s\nvalue %s, bound %s: %s", r.Rule.Expr, FormatValue(&r.Rule, r.Value), FormatValue(&r.Rule, r.Bound), r.Message)
		if r.Worst != "" {
			detail += "\nworst: " + r.Worst
		}
		if r.Pass {
			c.SystemOut = detail
		} else {
			c.Failure = &junitFailure{Message: r.Message, Type: r.Rule.Kind.String(), Body: detail}
		}
		s.Cases = append(s.Cases, c)
	}
	doc := junitSuites{Name: suite, Tests: s.Tests, Failures: s.Failures, Suites: []junitSuite{s}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	return nil
}

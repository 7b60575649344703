package perfetto

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/iket-trace/iket/trace"
)

// WriteJSON writes c in Chrome's trace-event JSON format (the legacy format
// chrome://tracing and ui.perfetto.dev both read). Each launch is a process
// (pid = launch index + 1); each warp a thread, with one more thread per
// async lane. Slices are B/E pairs built from the same model as the
// protobuf writer, so they nest strictly on every thread (the JSON importer
// mis-draws overlapping complete events on one thread). Marks and
// violations are thread-scoped instants. Timestamps are microseconds with
// three decimals (exact to the ns) relative to 1 us before the capture's
// earliest warp start; otherData.iket_time_origin_ns holds that origin.
// Counters and flows are left to the protobuf format. It does not close out.
func WriteJSON(out io.Writer, c *trace.Capture) error {
	decs := make([]*trace.Decoder, c.NumLaunches())
	for i := range decs {
		l := c.Launch(i)
		d, err := trace.NewDecoder(l, trace.Options{})
		if err != nil {
			return fmt.Errorf("write json: launch %d (%s): %w", i, l.Meta.Kernel, err)
		}
		decs[i] = d
	}
	origin := captureOrigin(decs)
	j := &jsonWriter{bw: bufio.NewWriterSize(out, 1<<16), origin: origin}
	j.raw(`{"displayTimeUnit":"ns","otherData":{"iket_time_origin_ns":`)
	j.b = strconv.AppendInt(j.b[:0], origin, 10)
	j.raw(string(j.b))
	j.raw(`},"traceEvents":[` + "\n")
	for i, d := range decs {
		l := c.Launch(i)
		pid := i + 1
		j.meta(pid, 0, "process_name", fmt.Sprintf("launch %d · %s", i, l.Meta.Kernel))
		j.metaInt(pid, 0, "process_sort_index", int64(i))
		problem := func(msg string) {
			j.meta(pid, 0, "thread_name", "problems")
			j.instant(pid, 0, 0, msg, "", "")
		}
		err := d.Each(func(wp *trace.Warp) error {
			if note := wp.LeftOut(); note != "" {
				problem(note)
			} else if wp.Started {
				j.warp(pid, l.Meta, wp)
			}
			return nil
		}, func(we *trace.WarpError) error {
			problem(we.Error())
			return nil
		})
		if err != nil {
			return fmt.Errorf("write json: launch %d: %w", i, err)
		}
	}
	j.raw("{}]}\n")
	if j.err == nil {
		j.err = j.bw.Flush()
	}
	if j.err != nil {
		return fmt.Errorf("write json: %w", j.err)
	}
	return nil
}

// captureOrigin returns 1 us before the earliest start anchor of any
// started warp ([trace.Decoder.GPUSpan]) of the launches decoded by decs.
func captureOrigin(decs []*trace.Decoder) int64 {
	origin := int64(math.MaxInt64)
	for _, d := range decs {
		if t, _, ok := d.GPUSpan(); ok && t >= 0 {
			origin = min(origin, t)
		}
	}
	if origin == math.MaxInt64 {
		return 0
	}
	return max(0, origin-1000)
}

type jsonWriter struct {
	bw     *bufio.Writer
	err    error
	b      []byte
	origin int64
	bd     builder
	names  []byte
}

func (j *jsonWriter) raw(s string) {
	if j.err == nil {
		_, j.err = j.bw.WriteString(s)
	}
}

func (j *jsonWriter) flush() {
	if j.err == nil {
		_, j.err = j.bw.Write(j.b)
	}
	j.b = j.b[:0]
}

// tid numbers a warp's thread (lane -1) and its lanes' threads.
func tid(slot uint64, lane int) uint64 { return slot<<9 | uint64(lane+1) }

func (j *jsonWriter) meta(pid int, tid uint64, what, name string) {
	j.b = fmt.Appendf(j.b[:0], `{"ph":"M","pid":%d,"tid":%d,"name":`, pid, tid)
	j.b = appendJSONString(j.b, what)
	j.b = append(j.b, `,"args":{"name":`...)
	j.b = appendJSONString(j.b, name)
	j.b = append(j.b, "}},\n"...)
	j.flush()
}

func (j *jsonWriter) metaInt(pid int, tid uint64, what string, v int64) {
	j.b = fmt.Appendf(j.b[:0], `{"ph":"M","pid":%d,"tid":%d,"name":`, pid, tid)
	j.b = appendJSONString(j.b, what)
	j.b = fmt.Appendf(j.b, `,"args":{"sort_index":%d}},`+"\n", v)
	j.flush()
}

// appendJSONString appends s as a JSON string (RFC 8259): quotes,
// backslashes and control characters escaped, invalid UTF-8 as U+FFFD,
// U+2028 and U+2029 escaped for JavaScript readers; other characters,
// non-ASCII included, as they are. (strconv.Quote's \x, \a, \v and \U
// escapes are not JSON.)
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&15])
		default:
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}

// ts appends a timestamp in us with three decimals.
func (j *jsonWriter) ts(ns int64) {
	d := ns - j.origin
	if d < 0 {
		j.b = append(j.b, '-')
		d = -d
	}
	j.b = strconv.AppendInt(j.b, d/1000, 10)
	f := d % 1000
	j.b = append(j.b, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
}

// instant writes a thread-scoped instant with a string argument, when
// argKey is not empty.
func (j *jsonWriter) instant(pid int, tid uint64, ns int64, name, argKey, argVal string) {
	j.b = append(j.b, `{"ph":"i","s":"t","pid":`...)
	j.b = strconv.AppendInt(j.b, int64(pid), 10)
	j.b = append(j.b, `,"tid":`...)
	j.b = strconv.AppendUint(j.b, tid, 10)
	j.b = append(j.b, `,"ts":`...)
	j.ts(ns)
	j.b = append(j.b, `,"name":`...)
	j.b = appendJSONString(j.b, name)
	if argKey != "" {
		j.b = append(j.b, `,"args":{`...)
		j.b = appendJSONString(j.b, argKey)
		j.b = append(j.b, ':')
		j.b = appendJSONString(j.b, argVal)
		j.b = append(j.b, '}')
	}
	j.b = append(j.b, "},\n"...)
	j.flush()
}

func (j *jsonWriter) warp(pid int, lm *trace.LaunchMeta, wp *trace.Warp) {
	v := warpView{info: warpInfo{
		slot: wp.Slot, sm: wp.SM, cta: wp.CTA, ctaLinear: wp.CTALinear, warp: wp.Warp, role: wp.Role,
		finished: wp.Finished, count: wp.Count, stored: wp.Stored, dropped: wp.Dropped, trimmed: wp.Trimmed,
		first: wp.First, last: wp.Last,
	}, ranges: wp.Ranges, marks: wp.Marks}
	if n := len(wp.Events); n > 0 {
		v.info.hasEv, v.info.firstEv, v.info.lastEv = true, wp.Events[0].Time(), wp.Events[n-1].Time()
	}
	sortRanges(v.ranges)
	nl := j.bd.build(&v, lm.Mode)
	name := fmt.Sprintf("sm %d · cta %d,%d,%d · warp %d", wp.SM, wp.CTA[0], wp.CTA[1], wp.CTA[2], wp.Warp)
	if wp.Role != 0 {
		name += " · " + lm.NameText(wp.Role)
	}
	j.meta(pid, tid(wp.Slot, -1), "thread_name", name)
	j.metaInt(pid, tid(wp.Slot, -1), "thread_sort_index", int64(tid(wp.Slot, -1)))
	for l := range nl {
		j.meta(pid, tid(wp.Slot, l), "thread_name", fmt.Sprintf("%s · async lane %d", name, l))
		j.metaInt(pid, tid(wp.Slot, l), "thread_sort_index", int64(tid(wp.Slot, l)))
	}
	for i := range j.bd.evs {
		e := &j.bd.evs[i]
		t := tid(wp.Slot, int(e.lt())-1)
		j.b = append(j.b[:0], `{"ph":"`...)
		switch e.typ() {
		case typeSliceBegin:
			j.b = append(j.b, 'B')
		case typeSliceEnd:
			j.b = append(j.b, 'E')
		default:
			j.b = append(j.b, `i","s":"t`...)
		}
		j.b = append(j.b, `","pid":`...)
		j.b = strconv.AppendInt(j.b, int64(pid), 10)
		j.b = append(j.b, `,"tid":`...)
		j.b = strconv.AppendUint(j.b, t, 10)
		j.b = append(j.b, `,"ts":`...)
		j.ts(e.ts)
		if e.typ() != typeSliceEnd {
			j.names = j.names[:0]
			switch e.src() {
			case srcRange:
				r := &v.ranges[e.idx]
				j.names = appendRangeName(j.names, lm, r.Name, r.Flags, 0)
				j.b = append(j.b, `,"name":`...)
				j.b = appendJSONString(j.b, string(j.names))
				j.b = fmt.Appendf(j.b, `,"args":{"payload":%d,"start_cycles":%d,"end_cycles":%d`, r.Payload, r.StartCycles, r.EndCycles)
				if r.Flags != 0 {
					j.b = append(j.b, `,"incomplete":`...)
					j.b = appendJSONString(j.b, incompleteText(r.Flags))
				}
				j.b = append(j.b, '}')
			case srcMark:
				m := &v.marks[e.idx]
				j.names = appendName(j.names, lm, m.Name)
				j.b = append(j.b, `,"name":`...)
				j.b = appendJSONString(j.b, string(j.names))
				j.b = fmt.Appendf(j.b, `,"args":{"payload":%d,"cycles":%d}`, m.Payload, m.Cycles)
			case srcDrop:
				j.b = fmt.Appendf(j.b, `,"name":"dropped events","args":{"dropped":%d,"attempted":%d,"stored":%d}`, wp.Dropped, wp.Count, wp.Stored)
			}
		}
		j.b = append(j.b, "},\n"...)
		j.flush()
	}
	for i := range wp.Violations {
		vi := &wp.Violations[i]
		ts := wp.Last
		if vi.Index >= 0 && vi.Index < len(wp.Events) {
			ts = wp.Events[vi.Index].Time()
		}
		j.instant(pid, tid(wp.Slot, -1), ts, "violation: "+vi.Kind.String(), "detail", vi.Detail)
	}
}

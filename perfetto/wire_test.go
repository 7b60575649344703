package perfetto

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/iket-trace/iket/perfetto/internal/pb"
)

// TestFieldNumbers pins the hand-written field numbers of the hot path to
// the schema, and the schema's numbers and kinds to Perfetto's.
func TestFieldNumbers(t *testing.T) {
	tests := []struct {
		msg   protoreflect.ProtoMessage
		field protoreflect.Name
		num   protowire.Number
		kind  protoreflect.Kind
	}{
		{&pb.Trace{}, "packet", fTracePacket, protoreflect.MessageKind},
		{&pb.TracePacket{}, "timestamp", fPktTimestamp, protoreflect.Uint64Kind},
		{&pb.TracePacket{}, "trusted_packet_sequence_id", fPktSequenceID, protoreflect.Uint32Kind},
		{&pb.TracePacket{}, "track_event", fPktTrackEvent, protoreflect.MessageKind},
		{&pb.TracePacket{}, "interned_data", fPktInternedData, protoreflect.MessageKind},
		{&pb.TracePacket{}, "sequence_flags", fPktSequenceFlags, protoreflect.Uint32Kind},
		{&pb.TracePacket{}, "compressed_packets", fPktCompressed, protoreflect.BytesKind},
		{&pb.TracePacket{}, "track_descriptor", fPktTrackDescriptor, protoreflect.MessageKind},
		{&pb.TracePacket{}, "first_packet_on_sequence", fPktFirstOnSequence, protoreflect.BoolKind},
		{&pb.TracePacket{}, "timestamp_clock_id", 58, protoreflect.Uint32Kind},
		{&pb.TracePacket{}, "clock_snapshot", fPktClockSnapshot, protoreflect.MessageKind},
		{&pb.TracePacket{}, "trace_packet_defaults", fPktDefaults, protoreflect.MessageKind},
		{&pb.TracePacketDefaults{}, "timestamp_clock_id", fDefTimestampClock, protoreflect.Uint32Kind},
		{&pb.TracePacketDefaults{}, "track_event_defaults", fDefTrackEvent, protoreflect.MessageKind},
		{&pb.TrackEventDefaults{}, "track_uuid", fTEDefTrackUUID, protoreflect.Uint64Kind},
		{&pb.ClockSnapshot{}, "clocks", fCSClocks, protoreflect.MessageKind},
		{&pb.ClockSnapshot_Clock{}, "clock_id", fClockID, protoreflect.Uint32Kind},
		{&pb.ClockSnapshot_Clock{}, "timestamp", fClockTimestamp, protoreflect.Uint64Kind},
		{&pb.ClockSnapshot_Clock{}, "is_incremental", fClockIncremental, protoreflect.BoolKind},
		{&pb.TrackEvent{}, "debug_annotations", fTEDebugAnnotations, protoreflect.MessageKind},
		{&pb.TrackEvent{}, "type", fTEType, protoreflect.EnumKind},
		{&pb.TrackEvent{}, "name_iid", fTENameIID, protoreflect.Uint64Kind},
		{&pb.TrackEvent{}, "name", 23, protoreflect.StringKind},
		{&pb.TrackEvent{}, "categories", 22, protoreflect.StringKind},
		{&pb.TrackEvent{}, "track_uuid", fTETrackUUID, protoreflect.Uint64Kind},
		{&pb.TrackEvent{}, "counter_value", fTECounterValue, protoreflect.Int64Kind},
		{&pb.TrackEvent{}, "double_counter_value", fTEDoubleCounter, protoreflect.DoubleKind},
		{&pb.TrackEvent{}, "flow_ids", fTEFlowIDs, protoreflect.Fixed64Kind},
		{&pb.TrackEvent{}, "terminating_flow_ids", fTETerminatingFlows, protoreflect.Fixed64Kind},
		{&pb.DebugAnnotation{}, "name_iid", fDANameIID, protoreflect.Uint64Kind},
		{&pb.DebugAnnotation{}, "name", 10, protoreflect.StringKind},
		{&pb.DebugAnnotation{}, "uint_value", fDAUintValue, protoreflect.Uint64Kind},
		{&pb.DebugAnnotation{}, "string_value", fDAStringValue, protoreflect.StringKind},
		{&pb.DebugAnnotation{}, "int_value", 4, protoreflect.Int64Kind},
		{&pb.DebugAnnotation{}, "double_value", 5, protoreflect.DoubleKind},
		{&pb.DebugAnnotation{}, "bool_value", 2, protoreflect.BoolKind},
		{&pb.InternedData{}, "event_names", fIDEventNames, protoreflect.MessageKind},
		{&pb.InternedData{}, "debug_annotation_names", fIDDebugAnnotNames, protoreflect.MessageKind},
		{&pb.EventName{}, "iid", fInternIID, protoreflect.Uint64Kind},
		{&pb.EventName{}, "name", fInternName, protoreflect.StringKind},
		{&pb.TrackDescriptor{}, "uuid", fTDUUID, protoreflect.Uint64Kind},
		{&pb.TrackDescriptor{}, "name", fTDName, protoreflect.StringKind},
		{&pb.TrackDescriptor{}, "parent_uuid", fTDParentUUID, protoreflect.Uint64Kind},
		{&pb.TrackDescriptor{}, "counter", fTDCounter, protoreflect.MessageKind},
		{&pb.TrackDescriptor{}, "child_ordering", fTDChildOrdering, protoreflect.EnumKind},
		{&pb.TrackDescriptor{}, "sibling_order_rank", fTDSiblingOrderRank, protoreflect.Int32Kind},
		{&pb.TrackDescriptor{}, "description", fTDDescription, protoreflect.StringKind},
		{&pb.TrackDescriptor{}, "sibling_merge_behavior", fTDSiblingMerge, protoreflect.EnumKind},
		{&pb.CounterDescriptor{}, "unit", fCDUnit, protoreflect.EnumKind},
		{&pb.CounterDescriptor{}, "unit_name", fCDUnitName, protoreflect.StringKind},
	}
	for _, tt := range tests {
		md := tt.msg.ProtoReflect().Descriptor()
		t.Run(string(md.Name())+"."+string(tt.field), func(t *testing.T) {
			fd := md.Fields().ByName(tt.field)
			if fd == nil {
				t.Fatalf("no field %s", tt.field)
			}
			if fd.Number() != tt.num || fd.Kind() != tt.kind {
				t.Errorf("field %s = %d %v, want %d %v", tt.field, fd.Number(), fd.Kind(), tt.num, tt.kind)
			}
			if fd.IsPacked() {
				t.Errorf("field %s is packed; Perfetto reads repeated scalars unpacked", tt.field)
			}
		})
	}
	enums := []struct {
		got, want protoreflect.EnumNumber
	}{
		{pb.TrackEvent_TYPE_SLICE_BEGIN.Number(), typeSliceBegin},
		{pb.TrackEvent_TYPE_SLICE_END.Number(), typeSliceEnd},
		{pb.TrackEvent_TYPE_INSTANT.Number(), typeInstant},
		{pb.TrackEvent_TYPE_COUNTER.Number(), typeCounter},
		{pb.TrackDescriptor_EXPLICIT.Number(), orderingExplicit},
		{pb.TrackDescriptor_SIBLING_MERGE_BEHAVIOR_NONE.Number(), mergeNone},
		{pb.CounterDescriptor_UNIT_COUNT.Number(), unitCount},
	}
	for _, e := range enums {
		if e.got != e.want {
			t.Errorf("enum value %d, want %d", e.got, e.want)
		}
	}
}

// TestFlowIDsWire checks the bytes: flow ids are unpacked fixed64s, one tag
// (field 47, wire type 1) per id.
func TestFlowIDsWire(t *testing.T) {
	b, err := proto.Marshal(&pb.TrackEvent{FlowIds: []uint64{7, 9}, TerminatingFlowIds: []uint64{3}})
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]int{{47, 1}, {47, 1}, {48, 1}}
	if diff := cmp.Diff(want, rawFields(t, b)); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
	// And the writer's own encoding of a flow source reads back the same.
	var got []byte
	got = appendFlowID(got, 7, false)
	got = appendFlowID(got, 9, false)
	got = appendFlowID(got, 3, true)
	if !bytes.Equal(b, got) {
		t.Errorf("writer bytes %x, marshal bytes %x", got, b)
	}
}

// TestHandEncodingMatchesSchema decodes the writer's hand-encoded packets
// with the generated types and re-encodes them: nothing is unknown.
func TestHandEncodingMatchesSchema(t *testing.T) {
	for i, p := range readPackets(t, writeLaunch(t, Options{Flows: true, Counters: true}, testMeta(), testWarps())) {
		if u := p.ProtoReflect().GetUnknown(); len(u) > 0 {
			t.Errorf("packet %d: unknown fields %x", i, u)
		}
		if te := p.GetTrackEvent(); te != nil {
			if u := te.ProtoReflect().GetUnknown(); len(u) > 0 {
				t.Errorf("packet %d: track event unknown fields %x", i, u)
			}
		}
	}
}

func TestCloseLen(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 300, 20000, 3 << 20} {
		body := bytes.Repeat([]byte{'x'}, n)
		b, at := openLen([]byte{0xaa}, 2)
		b = append(b, body...)
		b = closeLen(b, at)
		want := protowire.AppendBytes(protowire.AppendTag([]byte{0xaa}, 2, protowire.BytesType), body)
		if !bytes.Equal(b, want) {
			t.Errorf("n=%d: closeLen differs from AppendBytes", n)
		}
	}
}

// packets builds a trace from generated messages, for the checker's tests.
func packets(t *testing.T, ps ...*pb.TracePacket) []byte {
	t.Helper()
	b, err := proto.Marshal(&pb.Trace{Packet: ps})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCheckValidRejects(t *testing.T) {
	u := proto.Uint64
	u32 := proto.Uint32
	first := &pb.TracePacket{TrustedPacketSequenceId: u32(1), SequenceFlags: u32(3),
		InternedData: &pb.InternedData{EventNames: []*pb.EventName{{Iid: u(1), Name: proto.String("a")}}}}
	track := func(id, parent uint64, counter bool) *pb.TracePacket {
		td := &pb.TrackDescriptor{Uuid: u(id), Name: proto.String("t" + string(rune('0'+id))),
			SiblingMergeBehavior: pb.TrackDescriptor_SIBLING_MERGE_BEHAVIOR_NONE.Enum()}
		if parent != 0 {
			td.ParentUuid = u(parent)
		}
		if counter {
			td.Counter = &pb.CounterDescriptor{}
		}
		return &pb.TracePacket{TrustedPacketSequenceId: u32(1), Data: &pb.TracePacket_TrackDescriptor{TrackDescriptor: td}}
	}
	ev := func(ts uint64, typ pb.TrackEvent_Type, track uint64, mod func(*pb.TracePacket)) *pb.TracePacket {
		te := &pb.TrackEvent{Type: typ.Enum(), TrackUuid: u(track)}
		if typ == pb.TrackEvent_TYPE_SLICE_BEGIN || typ == pb.TrackEvent_TYPE_INSTANT {
			te.NameIid = u(1)
		}
		if typ == pb.TrackEvent_TYPE_COUNTER {
			te.CounterValue = proto.Int64(1)
		}
		p := &pb.TracePacket{Timestamp: u(ts), TrustedPacketSequenceId: u32(1), SequenceFlags: u32(2),
			Data: &pb.TracePacket_TrackEvent{TrackEvent: te}}
		if mod != nil {
			mod(p)
		}
		return p
	}
	// incr starts sequence 1 as the writer does: defaults on the
	// incremental clock 64, which a snapshot starts at 0 with BOOTTIME.
	incr := &pb.TracePacket{TrustedPacketSequenceId: u32(1), SequenceFlags: u32(3),
		InternedData:        first.InternedData,
		TracePacketDefaults: &pb.TracePacketDefaults{TimestampClockId: u32(64)},
		Data: &pb.TracePacket_ClockSnapshot{ClockSnapshot: &pb.ClockSnapshot{Clocks: []*pb.ClockSnapshot_Clock{
			{ClockId: u32(64), Timestamp: u(0), IsIncremental: proto.Bool(true)}, {ClockId: u32(6), Timestamp: u(0)}}}}}
	defTrack := func(id uint64) *pb.TracePacket {
		return &pb.TracePacket{TrustedPacketSequenceId: u32(1),
			TracePacketDefaults: &pb.TracePacketDefaults{TrackEventDefaults: &pb.TrackEventDefaults{TrackUuid: u(id)}}}
	}
	B, E, I, C := pb.TrackEvent_TYPE_SLICE_BEGIN, pb.TrackEvent_TYPE_SLICE_END, pb.TrackEvent_TYPE_INSTANT, pb.TrackEvent_TYPE_COUNTER
	tests := []struct {
		name string
		ps   []*pb.TracePacket
		want string // substring of the error; "" = valid
	}{
		{"valid", []*pb.TracePacket{first, track(1, 0, false), ev(10, B, 1, nil), ev(20, E, 1, nil), ev(15, I, 1, nil)}, ""},
		{"end before begin in time order", []*pb.TracePacket{first, track(1, 0, false), ev(20, B, 1, nil), ev(10, E, 1, nil)}, "no open slice"},
		{"unbalanced", []*pb.TracePacket{first, track(1, 0, false), ev(10, B, 1, nil)}, "never ended"},
		{"no sequence id", []*pb.TracePacket{first, track(1, 0, false), ev(10, I, 1, func(p *pb.TracePacket) { p.TrustedPacketSequenceId = nil })}, "without trusted_packet_sequence_id"},
		{"no timestamp", []*pb.TracePacket{first, track(1, 0, false), ev(10, I, 1, func(p *pb.TracePacket) { p.Timestamp = nil })}, "without a timestamp"},
		{"timestamp too large", []*pb.TracePacket{first, track(1, 0, false), ev(1<<63, I, 1, nil)}, "not below 2^63"},
		{"iid not interned", []*pb.TracePacket{first, track(1, 0, false), ev(10, I, 1, func(p *pb.TracePacket) { p.GetTrackEvent().NameIid = u(5) })}, "name iid 5 not interned"},
		{"interning before clear", []*pb.TracePacket{{TrustedPacketSequenceId: u32(1), SequenceFlags: u32(2),
			InternedData: &pb.InternedData{EventNames: []*pb.EventName{{Iid: u(1), Name: proto.String("a")}}}}}, "before a packet cleared"},
		{"no incremental flag", []*pb.TracePacket{first, track(1, 0, false), ev(10, I, 1, func(p *pb.TracePacket) { p.SequenceFlags = nil })}, ""},
		{"interned names never cleared", []*pb.TracePacket{track(1, 0, false), ev(10, I, 1, nil)}, "never cleared"},
		{"incremental clock", []*pb.TracePacket{incr, track(1, 0, false), ev(10, B, 1, nil), ev(5, E, 1, nil), ev(1<<64-15, I, 1, nil)}, ""},
		{"incremental clock goes negative", []*pb.TracePacket{incr, track(1, 0, false), ev(10, I, 1, nil), ev(1<<64-11, I, 1, nil)}, "negative"},
		{"clock without snapshot", []*pb.TracePacket{first, track(1, 0, false), ev(10, I, 1, func(p *pb.TracePacket) { p.TimestampClockId = u32(64) })}, "no clock snapshot"},
		{"snapshot without BOOTTIME", []*pb.TracePacket{{TrustedPacketSequenceId: u32(1), SequenceFlags: u32(3),
			Data: &pb.TracePacket_ClockSnapshot{ClockSnapshot: &pb.ClockSnapshot{Clocks: []*pb.ClockSnapshot_Clock{{ClockId: u32(64), IsIncremental: proto.Bool(true)}}}}}}, "without BOOTTIME"},
		{"incremental global clock", []*pb.TracePacket{{TrustedPacketSequenceId: u32(1), SequenceFlags: u32(3),
			Data: &pb.TracePacket_ClockSnapshot{ClockSnapshot: &pb.ClockSnapshot{Clocks: []*pb.ClockSnapshot_Clock{{ClockId: u32(3), IsIncremental: proto.Bool(true)}, {ClockId: u32(6)}}}}}}, "not sequence-scoped"},
		{"default track", []*pb.TracePacket{first, track(1, 0, false), defTrack(1), ev(10, I, 1, func(p *pb.TracePacket) { p.GetTrackEvent().TrackUuid = nil })}, ""},
		{"no default track", []*pb.TracePacket{first, track(1, 0, false), ev(10, I, 1, func(p *pb.TracePacket) { p.GetTrackEvent().TrackUuid = nil })}, "no default track"},
		{"unknown track", []*pb.TracePacket{first, ev(10, I, 9, nil)}, "no descriptor"},
		{"duplicate uuid", []*pb.TracePacket{first, track(1, 0, false), track(1, 0, false)}, "described twice"},
		{"parent after child", []*pb.TracePacket{first, track(2, 1, false), track(1, 0, false)}, "not described before"},
		{"counter on slice track", []*pb.TracePacket{first, track(1, 0, false), ev(10, C, 1, nil)}, "without a CounterDescriptor"},
		{"slice on counter track", []*pb.TracePacket{first, track(1, 0, true), ev(10, I, 1, nil)}, "on a counter track"},
		{"merged siblings", []*pb.TracePacket{first, track(1, 0, false),
			{Data: &pb.TracePacket_TrackDescriptor{TrackDescriptor: &pb.TrackDescriptor{Uuid: u(2), ParentUuid: u(1), Name: proto.String("x")}}},
			{Data: &pb.TracePacket_TrackDescriptor{TrackDescriptor: &pb.TrackDescriptor{Uuid: u(3), ParentUuid: u(1), Name: proto.String("x")}}}}, "would be merged"},
		{"dangling flow", []*pb.TracePacket{first, track(1, 0, false), ev(10, I, 1, func(p *pb.TracePacket) { p.GetTrackEvent().FlowIds = []uint64{4} })}, "one end only"},
		{"flow backwards", []*pb.TracePacket{first, track(1, 0, false),
			ev(10, I, 1, func(p *pb.TracePacket) { p.GetTrackEvent().TerminatingFlowIds = []uint64{4} }),
			ev(20, I, 1, func(p *pb.TracePacket) { p.GetTrackEvent().FlowIds = []uint64{4} })}, "not after its start"},
		{"flow ends later in time but earlier in file", []*pb.TracePacket{first, track(1, 0, false),
			ev(30, I, 1, func(p *pb.TracePacket) { p.GetTrackEvent().TerminatingFlowIds = []uint64{4} }),
			ev(20, I, 1, func(p *pb.TracePacket) { p.GetTrackEvent().FlowIds = []uint64{4} })}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckValid(bytes.NewReader(packets(t, tt.ps...)))
			if tt.want == "" {
				if err != nil {
					t.Errorf("CheckValid = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("CheckValid = %v, want an error containing %q", err, tt.want)
			}
			if !errors.Is(err, ErrInvalidTrace) {
				t.Errorf("error does not match ErrInvalidTrace")
			}
			var ce *CheckError
			if !errors.As(err, &ce) {
				t.Errorf("error is not a *CheckError")
			}
		})
	}
}

func TestCheckValidBadFraming(t *testing.T) {
	good := writeLaunch(t, Options{}, testMeta(), testWarps())
	tests := []struct {
		name string
		data []byte
	}{
		{"truncated", good[:len(good)-3]},
		{"wrong field", []byte{0x12, 0x00}},
		{"garbage packet", []byte{0x0a, 0x02, 0xff, 0xff}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := CheckValid(bytes.NewReader(tt.data)); err == nil {
				t.Error("CheckValid accepted a broken stream")
			}
		})
	}
}

var _ = protocmp.Transform

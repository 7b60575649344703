package iket

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/iket-trace/iket/iket/internal/cuda"
	"github.com/iket-trace/iket/internal/raw"
	"github.com/iket-trace/iket/kernels"
	"github.com/iket-trace/iket/trace"
)

// On a machine without libcuda.so.1 OpenDevice fails with ErrNoDevice and
// names the library; with a driver the test has nothing to check.
func TestOpenDeviceWithoutDriver(t *testing.T) {
	if cuda.Init() == nil {
		t.Skip("a CUDA driver is installed here; the no-driver path cannot be tested")
	}
	for name, f := range map[string]func() error{
		"OpenDevice":  func() error { _, err := OpenDevice(0); return err },
		"DeviceCount": func() error { _, err := DeviceCount(); return err },
	} {
		err := f()
		if err == nil {
			t.Fatalf("%s succeeded without a driver", name)
		}
		if !errors.Is(err, ErrNoDevice) {
			t.Errorf("%s: errors.Is(%v, ErrNoDevice) = false", name, err)
		}
		if !strings.Contains(err.Error(), "libcuda.so.1") || !strings.Contains(err.Error(), "load CUDA driver") {
			t.Errorf("%s: error %q does not name the driver library", name, err)
		}
	}
}

func TestDetectKind(t *testing.T) {
	elf := []byte("\x7fELF\x02\x01\x01\x33rest")
	fat := []byte{0x50, 0xed, 0x55, 0xba, 1, 0, 0x10, 0}
	ptx := []byte("//\n.version 8.5\n.target sm_90a\n.address_size 64\n")
	cu := []byte("#include \"iket.cuh\"\nextern \"C\" __global__ void k() {}\n")
	tests := []struct {
		path    string
		data    []byte
		want    SourceKind
		wantErr string
	}{
		{"k.cu", cu, KindCU, ""},
		{"k.cuh", cu, KindCU, ""},
		{"K.CU", cu, KindCU, ""},
		{"k.ptx", ptx, KindPTX, ""},
		{"k.cubin", elf, KindCUBIN, ""},
		{"k.fatbin", fat, KindFATBIN, ""},
		{"kernel", elf, KindCUBIN, ""},
		{"kernel.bin", fat, KindFATBIN, ""},
		{"kernel.txt", ptx, KindPTX, ""},
		{"-", cu, KindCU, ""},
		{"k.cubin", ptx, KindUnknown, "the name says cubin but the content is not"},
		{"k.ptx", elf, KindUnknown, "the name says ptx but the content is a cubin"},
		{"k.fatbin", elf, KindUnknown, "the name says fatbin but the content is a cubin"},
		{"notes.txt", []byte("hello"), KindUnknown, "not .cu, .ptx, .cubin or .fatbin"},
		{"empty", nil, KindUnknown, "not .cu"},
	}
	for _, tt := range tests {
		t.Run(tt.path+"/"+tt.want.String(), func(t *testing.T) {
			got, err := DetectKind(tt.path, tt.data)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), tt.path) {
					t.Fatalf("DetectKind(%q) error = %v, want one containing %q and the path", tt.path, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("DetectKind(%q) = %v, %v; want %v", tt.path, got, err, tt.want)
			}
		})
	}
}

func TestLoadSource(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "warp_roles.cu")
	data, err := kernels.Example("warp_roles.cu")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := LoadSource(p)
	if err != nil {
		t.Fatal(err)
	}
	if src.Kind != KindCU || src.Path != p || len(src.Data) != len(data) {
		t.Errorf("LoadSource = kind %v path %q %d bytes", src.Kind, src.Path, len(src.Data))
	}
	if _, err := LoadSource(filepath.Join(dir, "absent.cu")); err == nil || !strings.Contains(err.Error(), "absent.cu") {
		t.Errorf("LoadSource(absent) error = %v", err)
	}
}

func TestPackArgs(t *testing.T) {
	tests := []struct {
		name     string
		args     []Arg
		wantBlob []byte
		wantOffs []uintptr
	}{
		{"none", nil, nil, []uintptr{}},
		{"two pointers", []Arg{Ptr(0x1122334455667788), Ptr(1)},
			[]byte{0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 1, 0, 0, 0, 0, 0, 0, 0}, []uintptr{0, 8}},
		{"u32 then pointer aligns to 8", []Arg{U32(7), Ptr(2)},
			[]byte{7, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0}, []uintptr{0, 8}},
		{"pointer then two 4-byte scalars", []Arg{Ptr(3), I32(-1), F32(1)},
			[]byte{3, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0x80, 0x3f}, []uintptr{0, 8, 12}},
		{"f32 u64 f64 i64", []Arg{F32(-2), U64(5), F64(0.5), I64(-2)},
			[]byte{0, 0, 0, 0xc0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xe0, 0x3f, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
			[]uintptr{0, 8, 16, 24}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			blob, offs, err := packArgs(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantBlob, blob); diff != "" {
				t.Errorf("blob (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantOffs, offs); diff != "" {
				t.Errorf("offsets (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPackArgsErrors(t *testing.T) {
	closed := &Buffer{ptr: 0x1000, n: 16} // res nil: closed
	for name, args := range map[string][]Arg{
		"nil arg":       {Ptr(1), nil},
		"nil buffer":    {(*Buffer)(nil)},
		"closed buffer": {U32(1), closed},
	} {
		if _, _, err := packArgs(args); err == nil || !strings.Contains(err.Error(), "pack argument") {
			t.Errorf("%s: packArgs error = %v", name, err)
		}
	}
}

func TestValidateConfig(t *testing.T) {
	ok := LaunchConfig{Kernel: "k", Grid: [3]uint32{1056, 1, 1}, Block: [3]uint32{64, 1, 1}}
	with := func(f func(*LaunchConfig)) LaunchConfig { c := ok; f(&c); return c }
	tests := []struct {
		name      string
		cfg       LaunchConfig
		field     string
		msgSubstr string
	}{
		{"valid", ok, "", ""},
		{"valid cluster", with(func(c *LaunchConfig) { c.Grid = [3]uint32{8, 2, 1}; c.Cluster = [3]uint32{4, 2, 1} }), "", ""},
		{"valid 1024 threads", with(func(c *LaunchConfig) { c.Block = [3]uint32{32, 32, 1} }), "", ""},
		{"no kernel", with(func(c *LaunchConfig) { c.Kernel = "" }), "kernel", "no kernel name"},
		{"zero grid", with(func(c *LaunchConfig) { c.Grid[1] = 0 }), "grid", "y dimension is 0"},
		{"zero block", with(func(c *LaunchConfig) { c.Block = [3]uint32{} }), "block", "x dimension is 0"},
		{"grid y too large", with(func(c *LaunchConfig) { c.Grid[1] = 65536 }), "grid", "y dimension 65536 exceeds the device's 65535"},
		{"block z too large", with(func(c *LaunchConfig) { c.Block = [3]uint32{1, 1, 65} }), "block", "z dimension 65 exceeds the device's 64"},
		{"too many threads", with(func(c *LaunchConfig) { c.Block = [3]uint32{1024, 2, 1} }), "block", "2048 threads, at most 1024"},
		{"cluster zero axis", with(func(c *LaunchConfig) { c.Cluster = [3]uint32{2, 0, 1} }), "cluster", "y dimension is 0"},
		{"cluster not dividing", with(func(c *LaunchConfig) { c.Grid[0] = 7; c.Cluster = [3]uint32{2, 1, 1} }), "cluster", "not a multiple"},
		{"cluster too big", with(func(c *LaunchConfig) { c.Grid[0] = 32; c.Cluster = [3]uint32{16, 1, 1} }), "cluster", "16 CTAs, at most 8"},
		{"shared too big", with(func(c *LaunchConfig) { c.SharedBytes = 300 << 10 }), "shared_bytes", "307200 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate(DefaultLimits)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate(%v) = %v, want nil", tt.cfg, err)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("Validate(%v) = %v, want a *ConfigError", tt.cfg, err)
			}
			if ce.Field != tt.field || !strings.Contains(ce.Msg, tt.msgSubstr) {
				t.Errorf("ConfigError = field %q msg %q, want field %q msg containing %q", ce.Field, ce.Msg, tt.field, tt.msgSubstr)
			}
			if tt.cfg.Kernel != "" && !strings.Contains(err.Error(), tt.cfg.Kernel) {
				t.Errorf("error %q does not name the kernel", err)
			}
		})
	}
	noClusters := DefaultLimits
	noClusters.MaxClusterSize = 0
	if err := with(func(c *LaunchConfig) { c.Cluster = [3]uint32{1, 1, 1} }).Validate(noClusters); err == nil {
		t.Error("a cluster launch validated on a device without clusters")
	}
}

func TestLaunchConfigCounts(t *testing.T) {
	tests := []struct {
		cfg         LaunchConfig
		ctas, warps uint64
		warpsPerCTA uint32
		threads     uint64
		text        string
	}{
		{LaunchConfig{Grid: [3]uint32{1056, 1, 1}, Block: [3]uint32{64, 1, 1}}, 1056, 2112, 2, 64, "grid (1056,1,1) block (64,1,1)"},
		{LaunchConfig{Grid: [3]uint32{2, 3, 4}, Block: [3]uint32{33, 1, 1}}, 24, 48, 2, 33, "grid (2,3,4) block (33,1,1)"},
		{LaunchConfig{Grid: [3]uint32{4, 1, 1}, Block: [3]uint32{8, 8, 2}, Cluster: [3]uint32{2, 1, 1}, SharedBytes: 1024}, 4, 16, 4, 128,
			"grid (4,1,1) block (8,8,2) cluster (2,1,1) shared 1024 B"},
	}
	for _, tt := range tests {
		c := tt.cfg
		if c.CTAs() != tt.ctas || c.Warps() != tt.warps || c.WarpsPerCTA() != tt.warpsPerCTA || c.Threads() != tt.threads || c.String() != tt.text {
			t.Errorf("%v: ctas %d warps %d per CTA %d threads %d; want %d %d %d %d %q",
				c, c.CTAs(), c.Warps(), c.WarpsPerCTA(), c.Threads(), tt.ctas, tt.warps, tt.warpsPerCTA, tt.threads, tt.text)
		}
	}
}

func TestTraceOptionsDefaults(t *testing.T) {
	tests := []struct {
		in      TraceOptions
		want    TraceOptions
		wantErr string
	}{
		{TraceOptions{}, TraceOptions{Capacity: DefaultCapacity, Mode: trace.ModeStop, Timeout: DefaultTimeout}, ""},
		{TraceOptions{Capacity: 100, Mode: trace.ModeStop}, TraceOptions{Capacity: 100, Mode: trace.ModeStop, Timeout: DefaultTimeout}, ""},
		{TraceOptions{Capacity: 100, Mode: trace.ModeWrap}, TraceOptions{}, "wrap mode needs a power of two, have 100"},
		{TraceOptions{Capacity: 64, Mode: "ring"}, TraceOptions{}, `"ring"`},
		{TraceOptions{Capacity: raw.MaxCapacity + 1}, TraceOptions{}, "at most"},
	}
	for _, tt := range tests {
		got := tt.in
		err := got.defaults()
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("defaults(%+v) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("defaults(%+v) = %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("defaults(%+v) (-want +got):\n%s", tt.in, diff)
		}
	}
	if m := (&TraceOptions{Capacity: 64, Mode: trace.ModeWrap}).wrapMask(); m != 63 {
		t.Errorf("wrap mask = %d, want 63", m)
	}
	if m := (&TraceOptions{Capacity: 64, Mode: trace.ModeStop}).wrapMask(); m != raw.StopMask {
		t.Errorf("stop mask = %#x", m)
	}
}

func TestProgramCheckArgs(t *testing.T) {
	wr := &Program{Name: "warp_roles", Entry: "warp_roles", Params: []ParamKind{ParamPtr, ParamPtr}}
	tests := []struct {
		name    string
		args    []Arg
		wantErr string
	}{
		{"ok", []Arg{Ptr(0x1000), Ptr(0x2000)}, ""},
		{"none", nil, "0 arguments, the kernel takes 2"},
		{"one", []Arg{Ptr(1)}, "1 arguments, the kernel takes 2"},
		{"three", []Arg{Ptr(1), Ptr(2), U32(3)}, "3 arguments, the kernel takes 2"},
		{"scalar for pointer", []Arg{Ptr(1), U32(3)}, "argument 1 (u32 3) is a 4-byte scalar, the kernel wants a pointer"},
		{"8-byte scalar for pointer", []Arg{U64(1), Ptr(3)}, "argument 0 (u64 1) is a 8-byte scalar"},
		{"nil", []Arg{Ptr(1), nil}, "argument 1 is nil"},
		{"closed buffer", []Arg{Ptr(1), &Buffer{}}, "argument 1: buffer closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := wr.CheckArgs(tt.args)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != "args" || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "warp_roles") {
				t.Errorf("CheckArgs error = %v, want args ConfigError containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestWithinMean(t *testing.T) {
	if !within(100, 101.9, 0.02) || within(100, 102.1, 0.02) || !within(0, 0, 0.02) {
		t.Error("within tolerance is wrong")
	}
	if m := mean([]float64{1, 2, 6}); m != 3 {
		t.Errorf("mean = %v", m)
	}
}

// TestNewLatency checks the ratio of medians and the paired ratio (the
// median of each round's instrumented / uninstrumented, zero rounds left
// out), which differ when the slow rounds are not the same for both builds.
func TestNewLatency(t *testing.T) {
	rb := []float64{10, 20, 10, 0, 20}
	ri := []float64{11, 21, 11, 5, 21}
	lat := newLatency(rb, ri, trace.TimingSettings{Rounds: 5, Order: orderAlternating})
	if lat.Uninstrumented.MedianUS != 10 || lat.Instrumented.MedianUS != 11 {
		t.Fatalf("medians %v, %v, want 10 and 11", lat.Uninstrumented.MedianUS, lat.Instrumented.MedianUS)
	}
	if math.Abs(lat.Ratio-1.1) > 1e-12 {
		t.Errorf("ratio %v, want 1.1", lat.Ratio)
	}
	// Per-round ratios 1.1, 1.05, 1.1, 1.05 (round 4 left out): median 1.075.
	if math.Abs(lat.PairedRatio-1.075) > 1e-12 {
		t.Errorf("paired ratio %v, want 1.075", lat.PairedRatio)
	}
	if lat.Settings.Order != orderAlternating || len(lat.Uninstrumented.RoundsUS) != 5 {
		t.Errorf("settings %+v, rounds %v", lat.Settings, lat.Uninstrumented.RoundsUS)
	}
	if z := newLatency(nil, nil, trace.TimingSettings{}); z.Ratio != 0 || z.PairedRatio != 0 {
		t.Errorf("no rounds: ratio %v, paired %v, want 0 and 0", z.Ratio, z.PairedRatio)
	}
	// A control's figures come from the same comparison: 9, 22, 10, 7, 19
	// against the baseline's rounds: median 10 (ratio 1), per-round 0.9,
	// 1.1, 1, 0.95 (round 4 left out): median 0.975.
	c, ratio, paired := trace.Compare(rb, []float64{9, 22, 10, 7, 19})
	if c.MedianUS != 10 || len(c.RoundsUS) != 5 || math.Abs(ratio-1) > 1e-12 || math.Abs(paired-0.975) > 1e-12 {
		t.Errorf("control: samples %+v, ratio %v, paired %v; want median 10, ratio 1, paired 0.975", c, ratio, paired)
	}
}

func TestThrottleReasons(t *testing.T) {
	tests := []struct {
		mask uint64
		want []string
	}{
		{0, nil},
		{1, []string{"gpu_idle"}},
		{4 | 64, []string{"sw_power_cap", "hw_thermal_slowdown"}},
		{1 << 20, []string{"reason_0x100000"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, throttleReasons(tt.mask)); diff != "" {
			t.Errorf("throttleReasons(%#x) (-want +got):\n%s", tt.mask, diff)
		}
	}
}

func TestFormatUUID(t *testing.T) {
	u := [16]byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe}
	if got, want := formatUUID(u), "GPU-01234567-89ab-cdef-1032-547698badcfe"; got != want {
		t.Errorf("formatUUID = %q, want %q", got, want)
	}
}

// synthetic builds a TraceResult with n warps of capacity 4 whose headers
// and records look like a real launch.
func synthetic(t *testing.T, warps int) *TraceResult {
	t.Helper()
	meta := trace.LaunchMeta{
		Kernel: "k", Source: "k.cu", Grid: [3]uint32{uint32(warps), 1, 1}, Block: [3]uint32{32, 1, 1},
		WarpsPerCTA: 1, Warps: uint64(warps), Capacity: 4, Mode: trace.ModeStop,
		Names: []trace.Name{{ID: 1, Kind: trace.NameMark, Text: "start"}},
	}
	buf := make([]byte, meta.Size())
	for w := 0; w < warps; w++ {
		slot := buf[int64(w)*meta.Stride():]
		h := raw.WarpHeader{Magic: raw.WarpMagic, SM: uint32(w % 3), CTA: [3]uint32{uint32(w), 0, 0},
			StartGlobaltimer: 1000, StartClock: 5000, EndGlobaltimer: 2000, EndClock: 7000, Count: 1, Flags: 3}
		raw.EncodeWarpHeader(slot, &h)
		r := raw.MakeRecord(uint8(trace.KindMark), 1, uint16(w), 6000)
		for i := 0; i < 8; i++ {
			slot[raw.WarpHeaderSize+i] = byte(uint64(r) >> (8 * i))
		}
	}
	return &TraceResult{Meta: meta, Buffers: buf, Format: 1} // MakeRecord: version 1
}

func TestWriteCapture(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "trace.iket")
	a, b := synthetic(t, 3), synthetic(t, 5)
	b.Meta.Latency = &trace.Latency{Ratio: 1.25}
	meta := trace.Meta{Tool: "iket-test", Device: &trace.Device{Name: "Test GPU", SMs: 132}}
	if err := WriteCapture(path, meta, a, b); err != nil {
		t.Fatal(err)
	}
	c, err := trace.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if c.NumLaunches() != 2 || c.Meta.Tool != "iket-test" || c.Meta.Device.Name != "Test GPU" || c.Meta.Version != 1 {
		t.Fatalf("read back %d launches, tool %q, device %+v, version %d", c.NumLaunches(), c.Meta.Tool, c.Meta.Device, c.Meta.Version)
	}
	if c.Meta.Launches[1].Latency == nil || c.Meta.Launches[1].Latency.Ratio != 1.25 {
		t.Errorf("latency not kept: %+v", c.Meta.Launches[1].Latency)
	}
	for i, want := range []*TraceResult{a, b} {
		l := c.Launch(i)
		for w := uint64(0); w < l.Meta.Warps; w++ {
			got, err := l.ReadWarp(w, nil)
			if err != nil {
				t.Fatal(err)
			}
			st := l.Meta.Stride()
			if diff := cmp.Diff(want.Buffers[int64(w)*st:int64(w+1)*st], got); diff != "" {
				t.Errorf("launch %d warp %d (-want +got):\n%s", i, w, diff)
			}
		}
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("capture mode = %v, %v; want 0644", st.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the capture (no temp file left)", len(entries))
	}
}

func TestWriteCaptureErrors(t *testing.T) {
	dir := t.TempDir()
	short := synthetic(t, 2)
	short.Buffers = short.Buffers[:10]
	long := synthetic(t, 2)
	long.Buffers = append(long.Buffers, 0)
	v2 := synthetic(t, 2)
	v2.Format = 2
	tests := []struct {
		name     string
		path     string
		launches []*TraceResult
		wantErr  string
		version  int
	}{
		{"none", filepath.Join(dir, "a.iket"), nil, "no launches", 0},
		{"nil launch", filepath.Join(dir, "b.iket"), []*TraceResult{nil}, "launch 0 is nil", 0},
		{"short buffers", filepath.Join(dir, "c.iket"), []*TraceResult{short}, "launch 0 buffers: short by", 0},
		{"long buffers", filepath.Join(dir, "g.iket"), []*TraceResult{long}, "launch 0 buffers: more than the", 0},
		{"missing dir", filepath.Join(dir, "nope", "d.iket"), []*TraceResult{synthetic(t, 1)}, "nope", 0},
		{"two formats", filepath.Join(dir, "e.iket"), []*TraceResult{synthetic(t, 1), v2}, "launch 1 (k) has record format 2, launch 0 format 1", 0},
		{"meta version", filepath.Join(dir, "f.iket"), []*TraceResult{v2}, "metadata says format version 1, the launches' records are version 2", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := WriteCapture(tt.path, trace.Meta{Tool: "t", Version: tt.version}, tt.launches...)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "write capture") {
				t.Errorf("WriteCapture error = %v, want %q", err, tt.wantErr)
			}
			if _, serr := os.Stat(tt.path); serr == nil {
				t.Errorf("%s exists after a failed write", tt.path)
			}
		})
	}
}

func TestErrorTexts(t *testing.T) {
	cfg := LaunchConfig{Kernel: "k", Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{64, 1, 1}}
	ke := &KernelError{Kernel: "k", Config: cfg, Code: "CUDA_ERROR_ILLEGAL_ADDRESS", Err: &cuda.Error{Op: "cuEventQuery", Result: cuda.ErrIllegalAddress}}
	if got := ke.Error(); !strings.Contains(got, "kernel k grid (2,1,1) block (64,1,1) failed") || !strings.Contains(got, "CUDA_ERROR_ILLEGAL_ADDRESS") {
		t.Errorf("KernelError = %q", got)
	}
	var r cuda.Result
	if !errors.As(ke, &r) || r != cuda.ErrIllegalAddress || !sticky(ke) || codeOf(ke) != "CUDA_ERROR_ILLEGAL_ADDRESS" {
		t.Errorf("KernelError does not unwrap to its CUresult")
	}
	he := &HangError{Kernel: "k", Config: cfg, Timeout: 500e6}
	if got := he.Error(); !strings.Contains(got, "did not finish within 500ms (no warp buffers could be read)") {
		t.Errorf("HangError = %q", got)
	}
	de := &deviceError{ordinal: 1, msg: "closed"}
	if !errors.Is(de, ErrDeviceUnusable) || de.Error() != "device 1: closed" {
		t.Errorf("deviceError = %q", de)
	}
}

func TestStraddles(t *testing.T) {
	tests := []struct {
		p, size uint64
		want    bool
	}{
		{0x7f0000000000, 1 << 20, false},
		{0x7f00fffff000, 0x1000 - windowMargin, false}, // ends the margin below the boundary
		{0x7f00fffff000, 0x1000 - windowMargin + 1, true},
		{0x7f00fffff000, 0x1000, true}, // ends exactly at the boundary: no room for the cursor's limit
		{0x7f00ffffffc0, 8, false},
		{0x7f00ffffffe0, 8, true},
		{0x7f0100000000, 1<<32 - windowMargin, false}, // a whole window less the margin
		{0x7f0100000000, 0, false},
	}
	for _, tt := range tests {
		if got := straddles(tt.p, tt.size); got != tt.want {
			t.Errorf("straddles(%#x, %#x) = %v, want %v", tt.p, tt.size, got, tt.want)
		}
	}
}

func TestPipelineWarnings(t *testing.T) {
	const serialized = "ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized due to non wgmma instructions defining accumulator registers of a wgmma between start and end of the pipeline stage in the function 'gemm'"
	const ignored = "ptxas warning : (C7508) Potential Performance Loss: setmaxnreg ignored"
	tests := []struct {
		name, base, inst string
		want             int
	}{
		{"clean", "", "", 0},
		{"only instrumented", "", "ptxas info: 0 bytes\n" + serialized + "\n", 1},
		{"both builds", serialized, serialized, 0},
		{"two kinds, one shared", ignored, serialized + "\n" + ignored, 1},
		{"repeated once", "", serialized + "\n" + serialized, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PipelineWarnings(tt.base, tt.inst)
			if len(got) != tt.want {
				t.Fatalf("got %d warnings %q, want %d", len(got), got, tt.want)
			}
			for _, w := range got {
				if !strings.Contains(w, "C75") || !strings.Contains(w, "only the instrumented build") {
					t.Errorf("warning %q does not quote ptxas", w)
				}
			}
		})
	}
}

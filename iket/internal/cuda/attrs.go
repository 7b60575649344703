package cuda

// The declarations below need no cgo: the stub of a build without cgo
// (nocgo.go) shares them.

// DevicePtr is a device address.
type DevicePtr uint64

// Window is a launch's access-policy window: Bytes at Base persist in the
// L2 (0 bytes: none).
type Window struct {
	Base  DevicePtr
	Bytes uint64
}

// Device and function attributes (CUdevice_attribute, CUfunction_attribute)
// and flags iket uses.
const (
	AttrMaxThreadsPerBlock     = 1
	AttrMaxBlockDimX           = 2
	AttrMaxBlockDimY           = 3
	AttrMaxBlockDimZ           = 4
	AttrMaxGridDimX            = 5
	AttrMaxGridDimY            = 6
	AttrMaxGridDimZ            = 7
	AttrMaxSharedPerBlock      = 8
	AttrClockRateKHz           = 13
	AttrMultiprocessorCount    = 16
	AttrCanMapHostMemory       = 19
	AttrL2CacheSize            = 38
	AttrComputeCapabilityMajor = 75
	AttrComputeCapabilityMinor = 76
	AttrMaxSharedPerBlockOptin = 97
	AttrMaxPersistingL2        = 108
	AttrMaxAccessPolicyWindow  = 109
	AttrClusterLaunch          = 120

	FuncAttrMaxThreadsPerBlock = 0
	FuncAttrSharedSizeBytes    = 1
	FuncAttrLocalSizeBytes     = 3
	FuncAttrNumRegs            = 4
	FuncAttrMaxDynamicShared   = 8

	// MaxParams bounds a launch's argument count (shim.c's IKET_MAX_PARAMS).
	MaxParams = 256

	streamNonBlocking  = 1
	eventDisableTiming = 2
	hostAllocPortable  = 1
	hostAllocDeviceMap = 2
	errorLogSize       = 16 << 10
	maxNameLen         = 256
	uuidLen            = 16
)

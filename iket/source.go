package iket

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SourceKind is what a kernel file holds.
type SourceKind int

// Source kinds. CU is compiled with NVRTC; the others are loaded as given.
const (
	KindUnknown SourceKind = iota
	KindCU                 // CUDA C++ source
	KindPTX                // PTX text
	KindCUBIN              // an ELF cubin
	KindFATBIN             // a fat binary
)

func (k SourceKind) String() string {
	switch k {
	case KindCU:
		return "cu"
	case KindPTX:
		return "ptx"
	case KindCUBIN:
		return "cubin"
	case KindFATBIN:
		return "fatbin"
	}
	return "unknown"
}

// Prebuilt reports whether the kind is loaded as given (one build only).
func (k SourceKind) Prebuilt() bool { return k == KindPTX || k == KindCUBIN || k == KindFATBIN }

// Source is a kernel to build: CUDA C++ (compiled twice, with and without
// IKET_ENABLE) or a prebuilt PTX/cubin/fatbin image (one build: whether it is
// instrumented is read from the module).
type Source struct {
	Path     string // for messages and the capture's metadata
	Kind     SourceKind
	Data     []byte
	Includes map[string][]byte // extra headers by include name ("iket.cuh" is always supplied)
	Options  []string          // extra NVRTC options
}

// fatbinMagic opens a fat binary (little-endian 0xBA55ED50).
const fatbinMagic = 0xBA55ED50

// DetectKind names what data is: by the file extension when it is one of
// .cu .cuh .ptx .cubin .fatbin (and the content must not contradict it), else
// by content. It fails when neither tells.
func DetectKind(path string, data []byte) (SourceKind, error) {
	content := contentKind(data)
	var ext SourceKind
	switch strings.ToLower(filepath.Ext(path)) {
	case ".cu", ".cuh":
		ext = KindCU
	case ".ptx":
		ext = KindPTX
	case ".cubin":
		ext = KindCUBIN
	case ".fatbin":
		ext = KindFATBIN
	}
	switch {
	case ext == KindUnknown && content == KindUnknown:
		return KindUnknown, fmt.Errorf("detect kernel kind of %s: not .cu, .ptx, .cubin or .fatbin, and the content is none of them", path)
	case ext == KindUnknown:
		return content, nil
	case content == KindCUBIN || content == KindFATBIN:
		if content != ext {
			return KindUnknown, fmt.Errorf("detect kernel kind of %s: the name says %v but the content is a %v", path, ext, content)
		}
	case ext == KindCUBIN || ext == KindFATBIN:
		return KindUnknown, fmt.Errorf("detect kernel kind of %s: the name says %v but the content is not a binary of that kind", path, ext)
	}
	return ext, nil
}

func contentKind(b []byte) SourceKind {
	switch {
	case bytes.HasPrefix(b, []byte("\x7fELF")):
		return KindCUBIN
	case len(b) >= 4 && binary.LittleEndian.Uint32(b) == fatbinMagic:
		return KindFATBIN
	case bytes.Contains(b, []byte(".version")) && bytes.Contains(b, []byte(".target")) && !bytes.Contains(b, []byte("__global__")):
		return KindPTX
	case bytes.Contains(b, []byte("__global__")):
		return KindCU
	}
	return KindUnknown
}

// LoadSource reads a kernel file and detects its kind.
func LoadSource(path string) (Source, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Source{}, fmt.Errorf("load kernel source: %w", err)
	}
	k, err := DetectKind(path, data)
	if err != nil {
		return Source{}, err
	}
	return Source{Path: path, Kind: k, Data: data}, nil
}

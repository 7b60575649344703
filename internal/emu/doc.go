// Package emu emulates what kernels/include/iket.cuh writes into device
// memory, so tests can build real captures without a GPU. It is a test
// helper: import it only from _test.go files.
//
// A [Launch] holds per-warp scripts of events with explicit SM cycle times
// ([Warp.Push], [Warp.Pop], [Warp.Start], [Warp.End], [Warp.Mark],
// [Warp.Role]) and a clock model per SM ([Clock]: MHz, cycle counter offset,
// globaltimer offset and tick). [Launch.Capture] lays the warp buffers out
// exactly as docs/FORMAT.md says (stop mode: events past the capacity are
// not stored, only counted, and the scratch slot stays zero; wrap mode: a ring; records keep the low
// 32 bits of the clock; anchors are taken when the emulated globaltimer
// ticks; the exit flags for lanes that disagreed and a saturated count on
// request: [Warp.LanesDiverged], [Warp.SaturateAt]) and wraps them with
// trace.WriteCapture. [ProducerConsumer] builds a
// warp-specialised launch for tests of analysis and exporters.
package emu

// Package check evaluates pass/fail rules over one analysed launch, for CI:
// "iket check CAPTURE" fails when the pipeline stops overlapping, a range
// gets slower, events are dropped, ranges do not pair, or the instrumented
// build got slower than allowed.
//
// A rule is one expression, parsed by [ParseExpr] or loaded from YAML by
// [LoadRules]:
//
//	strict                                      no pairing violations
//	no_drops                                    no event dropped
//	overlap(producer_load, consumer_compute) >= 0.6
//	overlap_min_cta(producer_load, consumer_compute) >= 0.5
//	p99(consumer_compute) <= 2us                p50 p90 p99 mean min max; ns us ms s
//	p99(consumer_compute, role=consumer) <= 2us
//	count(consumer_compute, role=consumer) == 8 every warp of the role
//	count(consumer_compute) >= 64               all ranges of the launch
//	before(producer_load, consumer_compute)     payload-matched order
//	latency_ratio <= 1.05                       instrumented / uninstrumented
//	dormant_ratio <= 1.01                       the same, instrumented build not traced
//	control_ratio <= 1.01                       uninstrumented build again: the noise
//	p99(lag(producer:load, consumer:compute)) <= 2us   stage s's load end to its compute start
//	bubble(consumer:compute, producer:wait) <= 0.1     producer waits, no consumer computes
//	p50(consumer:compute) <= 1.05 * baseline    relative to a baseline capture
//
// A range may be role-qualified ("producer:load"); a plain name means the
// one role that ran it, or every role when several did.
//
// [Evaluate] turns rules and a [trace.Analysis] (one launch decoded once by
// [trace.Analyze]) into [Result] values; [WriteTable], [WriteJSON] and
// [WriteJUnit] report them. docs/CI.md defines every rule precisely.
package check

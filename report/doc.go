// Package report writes one launch of an iket capture as a single
// self-contained HTML page (report.html): a per-warp timeline grouped by
// role and drawn on a canvas (zoom, pan, hover), an aggregated "warps inside
// each range over time" strip for the whole launch, the statistics and
// overlap tables, drops, the latency comparison of the two builds, the
// recorded device conditions and the per-SM clock fits.
//
// The page needs no network: CSS and JavaScript are inline and the data is
// embedded as JSON in a <script type="application/json"> element. An [Input]
// holds the launch's [trace.Analysis], whose tables the page shows, and the
// warps its timeline draws: callers map decoded [trace.Warp] values with
// [WarpViewFrom] or, for launches of any size, stream them through a
// [Collector] (an also function of [trace.Analyze]), which keeps the events
// of the first warps up to a bound ([Limits]) and aggregates every warp into
// an [Activity] strip, so the page's size stays bounded whatever the launch.
package report

// The outputs of `pskel timeline`: a self-contained HTML page (inline script and style, the data
// embedded as JSON; docs/timeline.md) and Chrome trace-event JSON for Perfetto and
// chrome://tracing. Pure functions from a Timeline to text; thread-compatible.
#pragma once

#include <string>

#include "timeline/timeline.h"

namespace pskel::timeline {

// The page's data: the JSON object the page's script reads (docs/timeline.md, "Page data"),
// with '<' escaped so that it can sit inside a <script> element.
std::string page_data(const Timeline& timeline);

// The whole page: page/timeline.html with its style, script and page_data() inlined.
std::string timeline_page(const Timeline& timeline);

// {"traceEvents": [...]}: one process per node, one thread per rank, one complete ("X") event
// per call, counter ("C") events for the node's and each rank's CPU and memory use.
std::string perfetto_json(const Timeline& timeline);

}  // namespace pskel::timeline

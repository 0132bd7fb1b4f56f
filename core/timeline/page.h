// The outputs of `pskel timeline`: a self-contained HTML page (inline script and style, the data
// embedded as JSON; docs/timeline.md) and Chrome trace-event JSON for Perfetto and
// chrome://tracing. Pure functions from a Timeline to text; thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "timeline/timeline.h"

namespace pskel::timeline {

struct PageOptions {
  // Above this many ranks the page summarises all ranks in groups (groups.h) and draws the
  // calls of the `ranks` only: every call of 16,384 ranks would not open in a browser.
  size_t max_lanes = 256;
  int max_groups = 128;
  int group_buckets = 2048;
  // The ranks whose calls a page of groups draws, ascending (ranks beyond the job ignored);
  // empty: the first 16.
  std::vector<int> ranks;
};

// What a page of `timeline` holds: the ranks whose calls it draws (ascending) and, for a job of
// more than options.max_lanes ranks, how its ranks are grouped (groups 0: none).
struct PageLayout {
  std::vector<int> lanes;
  int groups = 0;
  int group_size = 0;
};
PageLayout page_layout(const Timeline& timeline, const PageOptions& options);

// The page's data: the JSON object the page's script reads (docs/timeline.md, "Page data"),
// with '<' escaped so that it can sit inside a <script> element.
std::string page_data(const Timeline& timeline, const PageOptions& options = {});

// The whole page: page/timeline.html with its style, script and page_data() inlined.
std::string timeline_page(const Timeline& timeline, const PageOptions& options = {});

// {"traceEvents": [...]}: one process per node, one thread per rank, one complete ("X") event
// per call, counter ("C") events for the node's and each rank's CPU and memory use.
std::string perfetto_json(const Timeline& timeline);

}  // namespace pskel::timeline

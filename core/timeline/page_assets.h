// The page's template, style and script (core/timeline/page/), embedded by embed_page.py.
// The template holds the markers <!--pskel:style-->, <!--pskel:data--> and <!--pskel:script-->.
#pragma once

#include <string_view>

namespace pskel::timeline {

extern const std::string_view kPageHtml;
extern const std::string_view kPageCss;
extern const std::string_view kPageJs;

}  // namespace pskel::timeline

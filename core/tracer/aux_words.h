// How many aux words a record keeps when its aux words do not fit in Record::aux_words (a
// uint16_t): as many whole entries as fit (docs/trace-format.md §4.11). The tracer's session
// applies it to every record; it is MPI-free and constexpr, so the unit tests drive it.
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "trace/format.h"
#include "trace/functions.h"

namespace pskel::tracer {

inline constexpr size_t kMaxAuxWords = UINT16_MAX;  // the largest Record::aux_words

struct AuxCut {
  uint16_t kept = 0;            // aux words the record keeps: a prefix of what it had
  uint32_t lost_requests = 0;   // requests whose completion or start entry was cut off
};

// What a record of `function` (a FunctionId) keeps of its `words` aux words: all of them if
// they fit, else as many whole entries as fit. An entry is kCompletionWords words in a
// completion record (one completed request) and one word in any other record (a started
// request's id, a count, a member's world rank). Cut entries of completion and start records
// are requests the trace no longer follows: lost_requests counts them. Other cuts show in the
// record itself, whose counts give the full length. The function table is searched only when
// the words do not fit, so the common case costs one comparison.
constexpr AuxCut cut_aux_words(uint16_t function, size_t words) {
  if (words <= kMaxAuxWords) return {static_cast<uint16_t>(words), 0};
  const trace::FunctionInfo* f = trace::find_function(function);
  const trace::FunctionKind kind = f ? f->kind : trace::FunctionKind::meta;
  const bool completion = kind == trace::FunctionKind::completion;
  const size_t entry = completion ? static_cast<size_t>(trace::kCompletionWords) : 1;
  const size_t kept = kMaxAuxWords - kMaxAuxWords % entry;
  const size_t lost =
      completion || kind == trace::FunctionKind::start ? (words - kept) / entry : 0;
  return {static_cast<uint16_t>(kept),
          lost > UINT32_MAX ? uint32_t{UINT32_MAX} : static_cast<uint32_t>(lost)};
}

}  // namespace pskel::tracer

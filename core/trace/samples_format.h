// The optional resource-sample file of a trace, DIR/samples.<rank> (docs/trace-format.md §10):
// the constants the tracer's sampler writes and the reader checks. Text, one sample per line.
// Header-only constants, so the tracer (no exceptions, no JSON) can include it.
#pragma once

namespace pskel::trace {

inline constexpr char kSamplesFilePrefix[] = "samples.";   // samples.<N>, N in decimal
inline constexpr char kSamplesMagic[] = "pskel-samples";   // first word of the header line
// 3: adds "p" lines (calibration probes); 2: adds "d" lines and column 8; 1: neither.
inline constexpr int kSamplesVersion = 3;
// Columns of a sample line, in order; a value the sampler could not read is -1. Version 1 files
// (7 columns) lack the last one, the traced thread's run-queue delay.
inline constexpr int kSampleColumns = 8;
inline constexpr int kSampleColumnsV1 = 7;
// PSKEL_SAMPLE_MS: milliseconds between samples; 0 turns sampling off.
inline constexpr char kSampleEnv[] = "PSKEL_SAMPLE_MS";
inline constexpr int kDefaultSampleMs = 100;

}  // namespace pskel::trace

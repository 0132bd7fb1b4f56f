// What tests of whole trace directories share: a meta.json for `ranks` ranks of run `run_id`,
// with per-rank hosts ("host<N>") and calibrations, as the tracer's meta writer writes it.
#pragma once

#include <cstdint>
#include <string>

#include "meta_writer.h"
#include "trace/format.h"

namespace pskel::test {

inline tracer::MetaInfo meta_for(const std::string& dir, int ranks, const std::string& run_id) {
  tracer::MetaInfo m;
  m.dir = dir;
  m.run_id = run_id;
  m.flavour = static_cast<uint32_t>(trace::Flavour::mpich);
  m.ranks = ranks;
  m.hosts.assign(static_cast<size_t>(ranks) * 64, '\0');
  for (int r = 0; r < ranks; ++r) {
    const std::string host = "host" + std::to_string(r);
    m.hosts.replace(static_cast<size_t>(r) * 64, host.size(), host);
  }
  m.work_ns_per_unit.assign(static_cast<size_t>(ranks), 1.5);
  m.start_realtime_ns = 1'700'000'000'000'000'000;
  m.end_realtime_ns = 1'700'000'004'000'000'000;
  m.init_entry_ns = 12345;
  m.complete = true;
  return m;
}

}  // namespace pskel::test

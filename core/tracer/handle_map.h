// The tracer's maps from MPI handles (as 64-bit keys) to small values: util::FlatMap at a fixed
// capacity, so that recording a call never allocates. Not thread-safe (the tracer records
// from one thread).
#pragma once

#include <cstdint>
#include <cstring>

#include "util/flat_map.h"

namespace pskel::tracer {

// Any handle type (an int in MPICH, a pointer in Open MPI) as a map key.
template <class Handle>
uint64_t handle_key(Handle h) {
  static_assert(sizeof(Handle) <= sizeof(uint64_t));
  uint64_t key = 0;
  std::memcpy(&key, &h, sizeof h);
  return key;
}

template <class Value>
using HandleMap = util::FlatMap<Value>;

}  // namespace pskel::tracer

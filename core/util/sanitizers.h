// Whether this build runs under a sanitizer whose allocator replaces glibc's malloc: it reads
// none of glibc's tunables or mallopt settings and may clear or fill what it hands out.
#pragma once

namespace pskel::util {

constexpr bool sanitizer_allocator() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
  return __has_feature(address_sanitizer) || __has_feature(memory_sanitizer);
#else
  return false;
#endif
}

}  // namespace pskel::util

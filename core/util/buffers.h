// Large arrays without needless passes over fresh memory, which cost a page fault per 4 KiB on
// first touch (tens of microseconds each on some virtual machines): an allocator that leaves new
// elements uninitialised, for buffers written whole before they are read, and an array that
// comes zeroed from the kernel, for sparse tables of which a few pages are ever touched.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace pskel::util {

template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  using std::allocator<T>::allocator;

  // resize(n) value-initialises through construct(p): default-initialise instead.
  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    std::allocator_traits<std::allocator<T>>::construct(static_cast<std::allocator<T>&>(*this), p,
                                                        std::forward<Args>(args)...);
  }
};

// A fixed array of n zeroed elements of a trivial type. calloc takes large blocks straight
// from the kernel, already zero: pages nobody writes are never faulted in.
template <typename T>
class ZeroedArray {
  static_assert(std::is_trivial_v<T>);

 public:
  ZeroedArray() = default;
  // Throws std::bad_alloc.
  explicit ZeroedArray(size_t n)
      : data_(static_cast<T*>(std::calloc(n ? n : 1, sizeof(T)))), size_(n) {
    if (!data_) throw std::bad_alloc();
  }

  size_t size() const { return size_; }
  T& operator[](size_t i) { return data_.get()[i]; }
  const T& operator[](size_t i) const { return data_.get()[i]; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data_;
  size_t size_ = 0;
};

}  // namespace pskel::util

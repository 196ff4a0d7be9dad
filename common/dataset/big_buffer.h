// Allocator for the large index arrays (hundreds of MB for long runs): large blocks are 2 MiB
// aligned and marked MADV_HUGEPAGE, which cuts page-fault time several-fold, and elements are
// default-initialised (not zeroed) because every builder overwrites all of them.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

namespace suite::dataset {

template <typename T>
struct BigAllocator {
  using value_type = T;
  static constexpr size_t kHugePage = size_t{2} << 20;

  BigAllocator() = default;
  template <typename U>
  BigAllocator(const BigAllocator<U>&) noexcept {}

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    void* p = nullptr;
    if (bytes >= 2 * kHugePage) {
      const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
      if (::posix_memalign(&p, kHugePage, rounded) != 0) throw std::bad_alloc();
      ::madvise(p, rounded, MADV_HUGEPAGE);  // advisory; failure only costs speed
    } else {
      p = std::malloc(bytes == 0 ? 1 : bytes);
      if (p == nullptr) throw std::bad_alloc();
    }
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) noexcept { std::free(p); }

  // resize() without zeroing.
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }

  template <typename U>
  bool operator==(const BigAllocator<U>&) const noexcept {
    return true;
  }
};

// A byte buffer for array data.
using ByteBuffer = std::vector<std::byte, BigAllocator<std::byte>>;

}  // namespace suite::dataset

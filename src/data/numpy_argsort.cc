#include "data/numpy_argsort.h"

#include <utility>

namespace replica::data {
namespace {

// Runs of this many elements or fewer (hi - lo <= kInsertionRun) are finished by insertion sort.
constexpr int64_t kInsertionRun = 15;

int FloorLog2(uint64_t n) {
  int r = 0;
  while (n >>= 1) ++r;
  return r;
}

// Heapsort of idx[0..n) by values (1-based heap over idx[-1 + k]).
void HeapSort(const int64_t* v, int64_t* idx, int64_t n) {
  int64_t* a = idx - 1;
  auto sift = [&](int64_t top, int64_t size) {
    int64_t moving = a[top];
    int64_t hole = top;
    for (int64_t child = top * 2; child <= size;) {
      if (child < size && v[a[child]] < v[a[child + 1]]) ++child;
      if (!(v[moving] < v[a[child]])) break;
      a[hole] = a[child];
      hole = child;
      child *= 2;
    }
    a[hole] = moving;
  };
  for (int64_t top = n / 2; top > 0; --top) sift(top, n);
  while (n > 1) {
    std::swap(a[1], a[n]);
    --n;
    // The element moved to the root is sifted down through the remaining heap.
    int64_t moving = a[1];
    int64_t hole = 1;
    for (int64_t child = 2; child <= n;) {
      if (child < n && v[a[child]] < v[a[child + 1]]) ++child;
      if (!(v[moving] < v[a[child]])) break;
      a[hole] = a[child];
      hole = child;
      child *= 2;
    }
    a[hole] = moving;
  }
}

}  // namespace

std::vector<int64_t> NumpyArgsort(std::span<const int64_t> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[static_cast<size_t>(i)] = i;
  if (n < 2) return idx;
  const int64_t* v = values.data();
  int64_t* s = idx.data();

  struct Pending {
    int64_t lo, hi;
    int depth;
  };
  std::vector<Pending> stack;
  int64_t lo = 0, hi = n - 1;
  int depth = FloorLog2(static_cast<uint64_t>(n)) * 2;
  for (;;) {
    if (depth < 0) {
      HeapSort(v, s + lo, hi - lo + 1);
    } else {
      while (hi - lo > kInsertionRun) {
        // Median of three into s[lo] <= s[mid] <= s[hi], the pivot parked at hi - 1.
        const int64_t mid = lo + ((hi - lo) >> 1);
        if (v[s[mid]] < v[s[lo]]) std::swap(s[mid], s[lo]);
        if (v[s[hi]] < v[s[mid]]) std::swap(s[hi], s[mid]);
        if (v[s[mid]] < v[s[lo]]) std::swap(s[mid], s[lo]);
        const int64_t pivot = v[s[mid]];
        int64_t i = lo, j = hi - 1;
        std::swap(s[mid], s[j]);
        for (;;) {
          do ++i; while (v[s[i]] < pivot);
          do --j; while (pivot < v[s[j]]);
          if (i >= j) break;
          std::swap(s[i], s[j]);
        }
        std::swap(s[i], s[hi - 1]);
        // The larger side waits on the stack; the loop continues with the smaller one.
        --depth;
        if (i - lo < hi - i) {
          stack.push_back({i + 1, hi, depth});
          hi = i - 1;
        } else {
          stack.push_back({lo, i - 1, depth});
          lo = i + 1;
        }
      }
      for (int64_t k = lo + 1; k <= hi; ++k) {
        const int64_t moving = s[k];
        const int64_t key = v[moving];
        int64_t h = k;
        while (h > lo && key < v[s[h - 1]]) {
          s[h] = s[h - 1];
          --h;
        }
        s[h] = moving;
      }
    }
    if (stack.empty()) break;
    lo = stack.back().lo;
    hi = stack.back().hi;
    depth = stack.back().depth;
    stack.pop_back();
  }
  return idx;
}

}  // namespace replica::data

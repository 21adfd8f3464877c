// Helpers shared by the op tests: seeded random tensors, relative errors, and directional finite
// differences that account for the rounding of the perturbed float inputs.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

namespace replica::testing {

inline std::vector<float> RandomVector(size_t n, uint64_t seed, float scale = 1.0f,
                                       float offset = 0.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = offset + scale * dist(rng);
  return v;
}

// ‖a − b‖ / ‖b‖ (Frobenius), in double.
inline double RelErr(const float* a, const float* b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(b[i]) * b[i];
  }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}
inline double RelErr(const std::vector<float>& a, const std::vector<float>& b) {
  return RelErr(a.data(), b.data(), a.size());
}

// Elements of a and b with the same bits (a and b the same size).
inline int64_t BitEqualCount(const std::vector<float>& a, const std::vector<float>& b) {
  int64_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += std::memcmp(&a[i], &b[i], sizeof(float)) == 0;
  return n;
}

inline bool BitEqual(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Checks an analytic gradient `grad` of the scalar f at x along a random direction:
//   f(x + h d) − f(x − h d)  ≈  Σ grad_i (x⁺_i − x⁻_i)
// where x± are the float-rounded perturbed inputs. Returns |fd − analytic| / |analytic|.
inline double DirectionalFdError(std::vector<float>& x, const std::vector<float>& grad,
                                 const std::function<double()>& f, double h, uint64_t seed) {
  const std::vector<float> x0 = x, d = RandomVector(x.size(), seed);
  std::vector<float> xp(x.size()), xm(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    xp[i] = static_cast<float>(x0[i] + h * d[i]);
    xm[i] = static_cast<float>(x0[i] - h * d[i]);
  }
  double analytic = 0;
  for (size_t i = 0; i < x.size(); ++i) analytic += static_cast<double>(grad[i]) * (xp[i] - xm[i]);
  x = xp;
  const double fp = f();
  x = xm;
  const double fm = f();
  x = x0;
  return std::abs((fp - fm) - analytic) / std::abs(analytic);
}

// Σ a_i b_i in double.
inline double Dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

}  // namespace replica::testing

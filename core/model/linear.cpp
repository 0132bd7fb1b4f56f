#include "linear.h"

#include <algorithm>
#include <cmath>

namespace pskel::model {
namespace {

// A pivot this small against the largest is taken as zero: the columns are dependent.
constexpr double kRankTolerance = 1e-10;

bool all_finite(const Matrix& x, std::span<const double> y) {
  for (size_t r = 0; r < x.rows(); ++r)
    for (size_t c = 0; c < x.cols(); ++c)
      if (!std::isfinite(x.at(r, c))) return false;
  return std::all_of(y.begin(), y.end(), [](double v) { return std::isfinite(v); });
}

// Least squares by Householder QR; needs x.rows() >= x.cols() and full column rank.
bool qr_solve(Matrix x, std::vector<double> y, std::vector<double>* a) {
  const size_t m = x.rows(), n = x.cols();
  std::vector<double> v(m);
  for (size_t k = 0; k < n; ++k) {
    double norm2 = 0;
    for (size_t i = k; i < m; ++i) norm2 += x.at(i, k) * x.at(i, k);
    if (norm2 == 0) continue;  // a zero column: found singular below
    const double alpha = x.at(k, k) > 0 ? -std::sqrt(norm2) : std::sqrt(norm2);
    double v_norm2 = 0;
    for (size_t i = k; i < m; ++i) {
      v[i] = x.at(i, k) - (i == k ? alpha : 0.0);
      v_norm2 += v[i] * v[i];
    }
    if (v_norm2 == 0) continue;
    for (size_t j = k; j < n; ++j) {
      double dot = 0;
      for (size_t i = k; i < m; ++i) dot += v[i] * x.at(i, j);
      const double f = 2 * dot / v_norm2;
      for (size_t i = k; i < m; ++i) x.at(i, j) -= f * v[i];
    }
    double dot = 0;
    for (size_t i = k; i < m; ++i) dot += v[i] * y[i];
    const double f = 2 * dot / v_norm2;
    for (size_t i = k; i < m; ++i) y[i] -= f * v[i];
  }
  double largest = 0;
  for (size_t k = 0; k < n; ++k) largest = std::max(largest, std::fabs(x.at(k, k)));
  if (largest == 0) return false;
  for (size_t k = 0; k < n; ++k)
    if (std::fabs(x.at(k, k)) <= kRankTolerance * largest) return false;
  std::vector<double> solution(n);
  for (size_t k = n; k-- > 0;) {
    double sum = y[k];
    for (size_t j = k + 1; j < n; ++j) sum -= x.at(k, j) * solution[j];
    solution[k] = sum / x.at(k, k);
  }
  *a = std::move(solution);
  return true;
}

// Solves g z = y for a symmetric positive definite g (Cholesky, in place).
bool cholesky_solve(Matrix g, std::vector<double> y, std::vector<double>* z) {
  const size_t n = g.rows();
  for (size_t j = 0; j < n; ++j) {
    double d = g.at(j, j);
    for (size_t k = 0; k < j; ++k) d -= g.at(j, k) * g.at(j, k);
    if (!(d > 0)) return false;
    g.at(j, j) = std::sqrt(d);
    for (size_t i = j + 1; i < n; ++i) {
      double s = g.at(i, j);
      for (size_t k = 0; k < j; ++k) s -= g.at(i, k) * g.at(j, k);
      g.at(i, j) = s / g.at(j, j);
    }
  }
  for (size_t i = 0; i < n; ++i) {  // L w = y
    for (size_t k = 0; k < i; ++k) y[i] -= g.at(i, k) * y[k];
    y[i] /= g.at(i, i);
  }
  for (size_t i = n; i-- > 0;) {  // L^T z = w
    for (size_t k = i + 1; k < n; ++k) y[i] -= g.at(k, i) * y[k];
    y[i] /= g.at(i, i);
  }
  *z = std::move(y);
  return true;
}

}  // namespace

bool least_squares(const Matrix& x, std::span<const double> y, double ridge,
                   std::vector<double>* a) {
  a->clear();
  const size_t m = x.rows(), n = x.cols();
  if (y.size() != m || n == 0 || m == 0 || !(ridge >= 0) || !std::isfinite(ridge) ||
      !all_finite(x, y))
    return false;
  if (m >= n) {
    if (ridge == 0) return qr_solve(x, std::vector<double>(y.begin(), y.end()), a);
    Matrix augmented(m + n, n);  // [X; sqrt(ridge) I] against [y; 0]
    for (size_t r = 0; r < m; ++r)
      for (size_t c = 0; c < n; ++c) augmented.at(r, c) = x.at(r, c);
    for (size_t c = 0; c < n; ++c) augmented.at(m + c, c) = std::sqrt(ridge);
    std::vector<double> target(y.begin(), y.end());
    target.resize(m + n, 0.0);
    return qr_solve(std::move(augmented), std::move(target), a);
  }
  if (ridge == 0) return false;  // fewer equations than unknowns: no unique solution
  // a = X^T (X X^T + ridge I)^-1 y: an m x m system however many features there are.
  Matrix gram(m, m);
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j <= i; ++j) {
      double dot = 0;
      for (size_t c = 0; c < n; ++c) dot += x.at(i, c) * x.at(j, c);
      gram.at(i, j) = gram.at(j, i) = dot + (i == j ? ridge : 0.0);
    }
  std::vector<double> z;
  if (!cholesky_solve(std::move(gram), std::vector<double>(y.begin(), y.end()), &z)) return false;
  std::vector<double> solution(n, 0.0);
  for (size_t c = 0; c < n; ++c)
    for (size_t r = 0; r < m; ++r) solution[c] += x.at(r, c) * z[r];
  *a = std::move(solution);
  return true;
}

}  // namespace pskel::model

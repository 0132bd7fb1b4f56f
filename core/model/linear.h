// Dense least squares for the small systems pskel's models fit: a few to a few dozen runs, up
// to a few thousand features. Householder QR where there are at least as many rows as
// columns, and the minimum-norm (ridge) solution through the runs' Gram matrix where there are
// fewer runs than features, the usual case of seed 001's first rounds. Pure; reentrant.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace pskel::model {

// A row-major matrix of doubles.
class Matrix {
 public:
  Matrix() = default;
  Matrix(size_t rows, size_t cols) : rows_(rows), cols_(cols), values_(rows * cols, 0.0) {}
  size_t rows() const { return rows_; }
  size_t cols() const { return cols_; }
  double& at(size_t r, size_t c) { return values_[r * cols_ + c]; }
  double at(size_t r, size_t c) const { return values_[r * cols_ + c]; }

 private:
  size_t rows_ = 0;
  size_t cols_ = 0;
  std::vector<double> values_;
};

// Solves min ||X a - y||^2 + ridge ||a||^2 for a (no intercept: centre the data first).
// ridge = 0 asks for ordinary least squares and needs X of full column rank, with at least as
// many rows as columns; ridge > 0 always has one solution. Returns false, leaving *a empty,
// when the system is singular (or y does not have X.rows() values, or anything is not finite).
bool least_squares(const Matrix& x, std::span<const double> y, double ridge,
                   std::vector<double>* a);

}  // namespace pskel::model

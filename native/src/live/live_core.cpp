// The live accumulator's host half (live_core.h).
#include "live/live_core.h"

#include <cmath>
#include <cstring>
#include <unordered_map>

namespace gavel::live {

std::vector<float> DecayWeights(int64_t b) {
  std::vector<float> w(static_cast<size_t>(b));
  for (int64_t j = 0; j < b; ++j) w[size_t(j)] = static_cast<float>(std::exp2(-double(b - 1 - j) / 64.0));
  return w;
}

double WeightSum(const std::vector<float>& w) {
  double s = 0;
  for (float x : w) s += x;
  return s;
}

bool Accumulator::Remap(const int32_t* handles, int64_t n, std::vector<int32_t>& from) {
  if (int64_t(handles_.size()) == n && (n == 0 || std::memcmp(handles_.data(), handles, size_t(n) * sizeof(int32_t)) == 0))
    return false;
  std::unordered_map<int32_t, int32_t> old;
  old.reserve(handles_.size());
  for (size_t c = 0; c < handles_.size(); ++c) old.emplace(handles_[c], int32_t(c));
  from.assign(size_t(n), -1);
  for (int64_t c = 0; c < n; ++c) {
    auto it = old.find(handles[c]);
    if (it != old.end()) from[size_t(c)] = it->second;
  }
  if (hostA_) {
    std::vector<double> acc(size_t(n), 0.0);
    for (int64_t c = 0; c < n; ++c)
      if (from[size_t(c)] >= 0) acc[size_t(c)] = acc_[size_t(from[size_t(c)])];
    acc_.swap(acc);
  }
  handles_.assign(handles, handles + n);
  return true;
}

Step Accumulator::Advance(int64_t b, double wb) {
  Step st;
  scale_ *= std::exp2(-double(b) / 64.0);
  if (scale_ < kRenormBelow) {
    st.renorm = scale_;
    wsum_ *= scale_;
    scale_ = 1;
  }
  st.inv = 1 / scale_;
  wsum_ += wb * st.inv;
  tokens_ += b;
  return st;
}

void Accumulator::Fold(const Step& st, const float* g, double wb) {
  if (st.renorm != 1)
    for (double& a : acc_) a *= st.renorm;
  const double f = wb * st.inv;
  for (size_t s = 0; s < acc_.size(); ++s) acc_[s] += double(g[s]) * f;
}

std::vector<double> Accumulator::Scores(const std::vector<double>* deviceA) const {
  const std::vector<double>& a = deviceA != nullptr ? *deviceA : acc_;
  std::vector<double> g(handles_.size(), 0.0);
  if (wsum_ > 0)
    for (size_t s = 0; s < g.size() && s < a.size(); ++s) g[s] = a[s] / wsum_;
  return g;
}

void Accumulator::Reset() {
  std::fill(acc_.begin(), acc_.end(), 0.0);
  wsum_ = 0;
  scale_ = 1;
  tokens_ = 0;
}

}  // namespace gavel::live

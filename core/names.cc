#include "core/names.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace collkit {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::vector<std::string> near_names(const std::string& given,
                                    const std::vector<std::string>& candidates) {
  const std::string g = lower(given);
  if (g.empty()) return {};
  const std::size_t limit = std::max<std::size_t>(2, g.size() / 3);
  std::vector<std::pair<std::size_t, std::string>> near;  // (rank, name)
  for (const std::string& c : candidates) {
    const std::string l = lower(c);
    std::size_t rank = 0;
    if (l.find(g) != std::string::npos || (l.size() >= 3 && g.find(l) != std::string::npos))
      rank = 0;
    else if (const std::size_t d = edit_distance(g, l); d <= limit)
      rank = d;
    else
      continue;
    near.emplace_back(rank, c);
  }
  std::stable_sort(near.begin(), near.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (auto& [rank, name] : near)
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(std::move(name));
  return out;
}

std::string did_you_mean(const std::string& given, const std::vector<std::string>& candidates) {
  const std::vector<std::string> near = near_names(given, candidates);
  if (near.empty()) return "";
  std::string out = "; did you mean ";
  for (std::size_t i = 0; i < near.size(); ++i)
    out += (i == 0 ? "" : i + 1 == near.size() ? " or " : ", ") + ("'" + near[i] + "'");
  return out + "?";
}

}  // namespace collkit

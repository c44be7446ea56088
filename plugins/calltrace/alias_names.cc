#include "alias_names.h"

#include <algorithm>

namespace calltrace {

bool AliasNames::better(const std::string& a, const std::string& b) {
  size_t ua = a.find_first_not_of('_'), ub = b.find_first_not_of('_');
  if (ua != ub) return ua < ub;
  if (a.size() != b.size()) return a.size() < b.size();
  return a < b;
}

void AliasNames::offer(const std::string& module, uint64_t address, const std::string& name) {
  std::vector<std::string>& names = names_[{module, address}];
  if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
}

const std::string* AliasNames::name(const std::string& module, uint64_t address) const {
  auto it = names_.find({module, address});
  if (it == names_.end() || it->second.empty()) return nullptr;
  const std::string* best = nullptr;
  bool best_imported = false;
  for (const std::string& n : it->second) {
    bool imp = imported_.count(n) != 0;
    if (!best || (imp && !best_imported) || (imp == best_imported && better(n, *best))) {
      best = &n;
      best_imported = imp;
    }
  }
  return best;
}

}  // namespace calltrace

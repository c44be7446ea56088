#include "alias_names.h"

namespace calltrace {

bool AliasNames::better(const std::string& a, const std::string& b) {
  size_t ua = a.find_first_not_of('_'), ub = b.find_first_not_of('_');
  if (ua != ub) return ua < ub;
  if (a.size() != b.size()) return a.size() < b.size();
  return a < b;
}

void AliasNames::offer(const std::string& module, uint64_t address, const std::string& name) {
  auto [it, added] = names_.try_emplace({module, address}, name);
  if (!added && better(name, it->second)) it->second = name;
}

const std::string* AliasNames::name(const std::string& module, uint64_t address) const {
  auto it = names_.find({module, address});
  return it == names_.end() ? nullptr : &it->second;
}

}  // namespace calltrace

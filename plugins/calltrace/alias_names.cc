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
  auto mod = names_.find(module);
  if (mod == names_.end()) mod = names_.emplace(module, std::map<uint64_t, Entry>{}).first;
  std::vector<std::string>& names = mod->second[address].names;
  if (std::find(names.begin(), names.end(), name) != names.end()) return;
  names.push_back(name);
  ++generation_;
}

const std::string* AliasNames::name(std::string_view module, uint64_t address) const {
  auto mod = names_.find(module);
  if (mod == names_.end()) return nullptr;
  auto it = mod->second.find(address);
  if (it == mod->second.end()) return nullptr;
  const Entry& e = it->second;
  if (e.chosen_at != generation_) {
    e.best = choose(e);
    e.chosen_at = generation_;
  }
  return e.best;
}

const std::string* AliasNames::choose(const Entry& e) const {
  const std::string* best = nullptr;
  bool best_imported = false;
  for (const std::string& n : e.names) {
    bool imp = imported_.count(n) != 0;
    if (!best || (imp && !best_imported) || (imp == best_imported && better(n, *best))) {
      best = &n;
      best_imported = imp;
    }
  }
  return best;
}

}  // namespace calltrace

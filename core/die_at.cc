#include "core/die_at.h"

#include <signal.h>

#include <cstdlib>
#include <cstring>
#include <string_view>

#include "core/log.h"

namespace ft::die_at {
namespace {

struct Plan {
  bool set = false;
  Moment moment = Moment::Syscall;
  unsigned long when = 0;
  unsigned long seen[2] = {0, 0};
};

Plan read_plan() {
  Plan plan;
  const char* v = std::getenv("FT_DIE_AT");
  if (!v || !*v) return plan;
  std::string_view s(v);
  auto colon = s.find(':');
  std::string_view kind = s.substr(0, colon);
  char* end = nullptr;
  unsigned long n = colon == std::string_view::npos ? 0 : std::strtoul(v + colon + 1, &end, 10);
  if ((kind != "syscall" && kind != "trap") || n == 0 || !end || *end != '\0') {
    log::warn("FT_DIE_AT={}: not syscall:N or trap:N (N from 1); ignored", v);
    return plan;
  }
  plan.set = true;
  plan.moment = kind == "syscall" ? Moment::Syscall : Moment::Trap;
  plan.when = n;
  return plan;
}

}  // namespace

void reached(Moment m) {
  static Plan plan = read_plan();
  if (!plan.set || m != plan.moment) return;
  if (++plan.seen[static_cast<int>(m)] == plan.when) raise(SIGKILL);
}

}  // namespace ft::die_at

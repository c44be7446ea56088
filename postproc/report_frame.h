// A frame as the reports show it, and the head of a group of sites (site_groups.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "postproc/site_table.h"

namespace ft::post {

// One shown frame. A frame whose code was inlined expands to several ReportFrames with
// the same address, innermost first, all but the last with `inlined`.
struct ReportFrame {
  uint64_t address = 0;  // as recorded (for a group of several processes: the first seen)
  std::optional<std::string> function;  // demangled
  std::optional<std::string> file;
  std::optional<int64_t> line;
  std::optional<std::string> module;
  uint64_t module_offset = 0;  // link-time address in the module (or file offset)
  bool inlined = false;
};

struct GroupHead {
  SiteId site = 0;       // the group's first site: its frames are the ones shown
  std::string mangled;   // traced function as recorded ("malloc", "_Znwm")
  std::string function;  // demangled
};

}  // namespace ft::post

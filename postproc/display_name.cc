#include "postproc/display_name.h"

#include <algorithm>
#include <iterator>
#include <span>

namespace ft::post {

namespace {

bool starts_with_any(std::string_view s, std::span<const std::string_view> prefixes) {
  for (std::string_view p : prefixes) {
    if (s.starts_with(p)) return true;
  }
  return false;
}

constexpr std::string_view kRuntimeFunctions[] = {
    "std::",     "__gnu_cxx::", "__cxxabiv1::", "operator new", "operator delete",
    "__libc_",   "_dl_",        "__GI_",        "__cxa_",
};
// Allocation wrappers of common libraries (gnulib, libiberty, glib), which call the
// allocator for their caller.
constexpr std::string_view kAllocationWrappers[] = {
    "xmalloc", "xcalloc", "xzalloc", "xrealloc", "xstrdup", "xmemdup", "xnmalloc", "xcharalloc",
    "g_malloc", "g_malloc0", "g_realloc", "g_try_malloc", "g_try_malloc0", "g_strdup", "g_memdup",
    "g_memdup2", "g_malloc_n", "g_malloc0_n"};
constexpr std::string_view kRuntimeFiles[] = {"/usr/include/", "/usr/lib/gcc/",
                                              "/usr/local/include/c++/"};
constexpr std::string_view kRuntimeModules[] = {"libc.so", "libc-", "libstdc++.so", "libgcc_s.so",
                                                "ld-linux", "ld64.so", "libm.so", "libpthread.so"};

std::string_view base_name(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

bool is_runtime_frame(const ReportFrame& f) {
  if (f.function && starts_with_any(*f.function, kRuntimeFunctions)) return true;
  if (f.function && std::find(std::begin(kAllocationWrappers), std::end(kAllocationWrappers), *f.function) !=
                        std::end(kAllocationWrappers)) {
    return true;
  }
  if (f.file && starts_with_any(*f.file, kRuntimeFiles)) return true;
  if (f.module && starts_with_any(base_name(*f.module), kRuntimeModules)) return true;
  return false;
}

const ReportFrame* first_user_frame(const std::vector<ReportFrame>& frames) {
  for (const ReportFrame& f : frames) {
    if (!is_runtime_frame(f)) return &f;
  }
  return frames.empty() ? nullptr : &frames.front();
}

std::string short_display_name(std::string_view name) {
  std::string out;
  int angle = 0;  // depth of template argument lists
  int paren = 0;  // depth of parameter lists
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    std::string_view rest = name.substr(i);
    if (angle == 0 && paren == 0) {
      // Operators whose names hold < > ( ) are kept as they are.
      if (rest.starts_with("operator")) {
        std::string_view op = rest.substr(8);
        for (std::string_view sym : {"<<=", ">>=", "<=>", "<<", ">>", "<=", ">=", "->*", "->", "<", ">",
                                     "()"}) {
          if (op.starts_with(sym)) {
            out.append(rest.substr(0, 8 + sym.size()));
            i += 8 + sym.size() - 1;
            goto next;
          }
        }
      }
      if (rest.starts_with("(anonymous namespace)")) {
        out.append("(anonymous namespace)");
        i += std::string_view("(anonymous namespace)").size() - 1;
        continue;
      }
    }
    if (c == '<' && paren == 0) {
      if (angle++ == 0) out += "<\u2026";
      continue;
    }
    if (c == '>' && paren == 0 && angle > 0) {
      if (--angle == 0) out += '>';
      continue;
    }
    if (c == '(' && angle == 0) {
      if (paren++ == 0) {
        bool empty = i + 1 < name.size() && name[i + 1] == ')';
        out += empty ? "(" : "(\u2026";
      }
      continue;
    }
    if (c == ')' && angle == 0 && paren > 0) {
      if (--paren == 0) out += ')';
      continue;
    }
    if (angle == 0 && paren == 0) out += c;
  next:;
  }
  return out;
}

}  // namespace ft::post

// How the HTML page shows a frame of a backtrace to a reader in a hurry.
//
//  - first_user_frame(): a group of allocations is titled by the first frame of the
//    program's own code, as heaptrack does, not by the allocator internals that every
//    C++ allocation goes through ("std::__new_allocator<int>::allocate", "operator
//    new", "std::vector<...>::_M_realloc_insert"): the innermost frame that is not
//    runtime code. Runtime code is the C and C++ runtimes' own functions (std::,
//    __gnu_cxx::, __cxxabiv1::, operator new/delete, __libc_*, _dl_*), the allocation
//    wrappers of common libraries (xmalloc, xstrdup, g_malloc...), code inlined
//    from their headers (a file under /usr/include or gcc's own include directory),
//    and frames in the C and C++ runtime libraries (libc, libstdc++, libgcc_s, the
//    dynamic loader).
//  - short_display_name(): long C++ names shortened for a table cell, the full name
//    kept for the title attribute: template argument lists become "<…>" and non-empty
//    parameter lists "(…)" ("std::vector<int, std::allocator<int> >::push_back(int
//    const&)" -> "std::vector<…>::push_back(…)"). "operator<", "operator<<",
//    "operator->" and "(anonymous namespace)" are kept as they are.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "postproc/report_frame.h"

namespace ft::post {

bool is_runtime_frame(const ReportFrame& frame);

// The first frame of the program's own code, innermost first; the innermost frame
// when all are runtime code; nullptr for an empty backtrace.
const ReportFrame* first_user_frame(const std::vector<ReportFrame>& frames);

std::string short_display_name(std::string_view name);

}  // namespace ft::post

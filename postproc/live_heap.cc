#include "postproc/live_heap.h"

#include "functracer/schema.h"

namespace ft::post {

bool LiveHeap::apply(const TraceRecord& r) {
  uint64_t before = bytes();
  if (r.type == schema::type::kAlloc) {
    if (auto a = schema::AllocRecord::read(r)) live_.alloc(a->address, a->size);
  } else if (r.type == schema::type::kFree) {
    if (auto f = schema::FreeRecord::read(r)) live_.release(f->address);
  } else if (r.type == schema::type::kExec) {
    clear();
  }
  return bytes() != before;
}

}  // namespace ft::post

#include "postproc/call_graph.h"

#include <algorithm>

#include "functracer/schema.h"

namespace ft::post {

void CallGraph::begin_process(const TraceReader& reader) {
  symbolizer_.begin_process();
  by_address_.clear();
  sites_.clear();
  threads_.clear();
  Process p;
  p.pid = reader.pid();
  if (const TraceRecord* h = reader.header()) {
    if (const std::string* exe = h->get_str(schema::key::kExe)) p.exe = *exe;
    if (const std::string* cmd = h->get_str(schema::key::kCmdline)) p.cmdline = *cmd;
  }
  processes_.push_back(std::move(p));
}

void CallGraph::on_record(const TraceRecord& record) {
  if (record.type == schema::type::kModule || record.type == schema::type::kExec) {
    symbolizer_.observe(record);
    by_address_.clear();
    sites_.clear();
  }
}

uint32_t CallGraph::function_for(const Activation& a) {
  if (auto it = by_address_.find(a.address); it != by_address_.end()) {
    if (functions_[it->second].mangled == a.function) return it->second;
  }
  Symbolizer::Location loc = symbolizer_.locate(a.address);
  Symbolizer::CodeKey key = symbolizer_.key(loc);
  auto [it, inserted] =
      index_.try_emplace({key, a.function}, static_cast<uint32_t>(functions_.size()));
  if (inserted) {
    Function f;
    f.mangled = a.function;
    f.location = loc;
    f.key = key;
    functions_.push_back(std::move(f));
  }
  by_address_[a.address] = it->second;
  return it->second;
}

const CallGraph::Site& CallGraph::site_for(uint64_t callsite) {
  auto [it, inserted] = sites_.try_emplace(callsite);
  if (inserted) {
    it->second.location = symbolizer_.locate(callsite);
    it->second.key = symbolizer_.key(it->second.location);
    const ResolvedAddress& r = symbolizer_.resolve(it->second.location, true);
    if (it->second.key.file != Symbolizer::kNone && r.symbol_size > 0)
      it->second.symbol = Symbolizer::CodeKey{it->second.key.file, r.symbol_address};
  }
  return it->second;
}

void CallGraph::on_call(int64_t tid, const Activation& a) {
  if (tid_ && *tid_ != tid) return;
  uint32_t id = function_for(a);
  ThreadState& t = threads_[tid];
  t.stack.push_back(id);
  if (t.active.size() <= id) t.active.resize(functions_.size(), 0);
  ++t.active[id];
  ++functions_[id].calls;
}

void CallGraph::on_end(int64_t tid, const Activation& a, const ActivationEnd& end) {
  if (tid_ && *tid_ != tid) return;
  ThreadState& t = threads_[tid];
  if (t.stack.empty()) return;  // not possible with CallModel: every end had its call
  uint32_t id = t.stack.back();
  t.stack.pop_back();
  uint32_t caller = t.stack.empty() ? kRoot : t.stack.back();
  Function& f = functions_[id];
  f.self_ns += end.self_ns;
  const Site* site = a.callsite && caller != kRoot ? &site_for(*a.callsite) : nullptr;
  if (site && site->symbol != functions_[caller].key) site = nullptr;  // not made by the caller
  auto [it, inserted] = arcs_.try_emplace(ArcKey{caller, id, site != nullptr, site ? site->key : Symbolizer::CodeKey{}});
  Arc& arc = it->second;
  if (inserted) {
    arc.caller = caller;
    arc.callee = id;
    if (site) arc.site = site->location;
  }
  ++arc.calls;
  if (--t.active[id] == 0) {
    f.inclusive_ns += end.inclusive_ns;
    arc.inclusive_ns += end.inclusive_ns;
  }
}

void CallGraph::end_process() { threads_.clear(); }

std::vector<CallGraph::Arc> CallGraph::arcs() const {
  std::vector<Arc> out;
  out.reserve(arcs_.size());
  for (const auto& [k, arc] : arcs_) out.push_back(arc);
  return out;  // the map's order: (caller, callee, site), kRoot = UINT32_MAX last
}

uint64_t CallGraph::total_self_ns() const {
  uint64_t sum = 0;
  for (const Function& f : functions_) sum += f.self_ns;
  return sum;
}

Status build_call_graph(const std::vector<std::string>& paths, CallGraph& graph,
                        Diagnostics& diag) {
  return replay_traces(paths, graph, diag);
}

}  // namespace ft::post

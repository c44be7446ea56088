#include "postproc/call_model.h"

#include <utility>

#include "functracer/schema.h"

namespace ft::post {

namespace {

constexpr std::string_view kMissingReturn = "missing return";
constexpr std::string_view kEndOfTrace = "end of trace";

}  // namespace

CallModel::ThreadState& CallModel::thread(int64_t tid) {
  auto [it, inserted] = index_.try_emplace(tid, threads_.size());
  if (inserted) threads_.push_back(ThreadState{tid, {}});
  return threads_[it->second];
}

void CallModel::close_top(ThreadState& t, EndKind kind, uint64_t ts, uint64_t retval, std::optional<uint64_t> fretval,
                          std::string_view reason, bool implicit, std::optional<std::string_view> retstr) {
  Activation& a = t.stack.back();
  ActivationEnd end;
  end.kind = kind;
  end.ts = ts;
  end.retval = retval;
  end.fretval = fretval;
  end.retstr = retstr;
  end.reason = reason;
  end.implicit = implicit;
  end.inclusive_ns = ts >= a.call_ts ? ts - a.call_ts : 0;
  end.self_ns = end.inclusive_ns >= a.children_ns ? end.inclusive_ns - a.children_ns : 0;
  observer_.on_end(t.tid, a, end);
  t.stack.pop_back();
  if (!t.stack.empty()) {
    t.stack.back().children_ns += end.inclusive_ns;
    t.stack.back().children += 1;
  }
}

void CallModel::close_all(ThreadState& t, uint64_t ts, std::string_view reason) {
  while (!t.stack.empty()) close_top(t, EndKind::kUnwound, ts, 0, std::nullopt, reason, true);
}

void CallModel::close_all_threads(uint64_t ts, std::string_view reason) {
  for (auto& t : threads_) close_all(t, ts, reason);
}

void CallModel::on_call(const TraceRecord& r) {
  ThreadState& t = thread(r.tid);
  const schema::CallRecord call = schema::CallRecord::read(r);
  Activation a;
  a.function = call.frame.function;
  a.address = call.frame.address;
  a.depth = call.frame.depth.value_or(static_cast<int64_t>(t.stack.size()));
  while (!t.stack.empty() && t.stack.back().depth >= a.depth) {
    ++missing_returns_;
    close_top(t, EndKind::kUnwound, r.ts_ns, 0, std::nullopt, kMissingReturn, true);
  }
  a.level = t.stack.size();
  a.seq = r.seq;
  a.call_ts = r.ts_ns;
  a.args.assign(call.args.begin(), call.args.end());
  for (size_t i = 0; i < kArgRegisters; ++i) {
    if (call.strings[i]) a.strings[i] = std::string(*call.strings[i]);
    if (call.structs[i]) a.structs[i] = std::string(*call.structs[i]);
  }
  a.nargs = call.nargs;
  if (call.types) a.types = std::string(*call.types);
  a.fargs.assign(call.fargs.begin(), call.fargs.end());
  a.callsite = call.callsite;
  t.stack.push_back(std::move(a));
  observer_.on_call(t.tid, t.stack.back());
}

void CallModel::on_end(const TraceRecord& r, EndKind kind) {
  ThreadState& t = thread(r.tid);
  if (t.stack.empty()) {
    ++unmatched_ends_;
    return;
  }
  int64_t depth = r.get_int(schema::key::kDepth).value_or(t.stack.back().depth);
  size_t i = t.stack.size();
  while (i > 0 && t.stack[i - 1].depth != depth) --i;
  if (i == 0) {
    ++unmatched_ends_;
    return;
  }
  while (t.stack.size() > i) {
    ++missing_returns_;
    close_top(t, EndKind::kUnwound, r.ts_ns, 0, std::nullopt, kMissingReturn, true);
  }
  if (kind == EndKind::kReturn) {
    const schema::ReturnRecord ret = schema::ReturnRecord::read(r);
    close_top(t, kind, r.ts_ns, ret.retval, ret.fretval, {}, false, ret.retstr);
  } else {
    close_top(t, kind, r.ts_ns, 0, std::nullopt, schema::UnwoundRecord::read(r).reason, false);
  }
}

void CallModel::feed(const TraceRecord& r) {
  namespace rt = schema::type;
  const std::string& type = r.type;
  if (type == rt::kCall) {
    on_call(r);
  } else if (type == rt::kReturn) {
    on_end(r, EndKind::kReturn);
  } else if (type == rt::kUnwound) {
    on_end(r, EndKind::kUnwound);
  } else if (type == rt::kThreadExit) {
    // The frames closed by the end of a thread or process take the name of that end
    // as their reason: "exit", "killed", "exec", "detach".
    if (auto it = index_.find(r.tid); it != index_.end()) close_all(threads_[it->second], r.ts_ns, rt::kExit);
  } else if (type == rt::kExit) {
    close_all_threads(r.ts_ns, rt::kExit);
  } else if (type == rt::kKilled) {
    close_all_threads(r.ts_ns, rt::kKilled);
  } else if (type == rt::kExec) {
    close_all_threads(r.ts_ns, rt::kExec);
  } else if (type == rt::kDetach) {
    close_all_threads(r.ts_ns, rt::kDetach);
  }
}

void CallModel::finish(uint64_t last_ts) {
  close_all_threads(last_ts, kEndOfTrace);
  threads_.clear();
  index_.clear();
}

Status replay_traces(const std::vector<std::string>& paths, CallObserver& observer,
                     Diagnostics& diag) {
  for (const std::string& path : paths) {
    auto reader = TraceReader::open(path, diag);
    if (!reader) return reader.error();
    CallModel model(observer);
    observer.begin_process(*reader);
    while (const TraceRecord* r = reader->next()) {
      observer.on_record(*r);
      model.feed(*r);
    }
    model.finish(reader->last_ts());
    observer.end_process();
    if (uint64_t n = model.unmatched_ends(); n > 0) {
      diag.warning(path + ": " + std::to_string(n) +
                   (n == 1 ? " return/unwound record matches" : " return/unwound records match") +
                   " no open call; ignored");
    }
    if (uint64_t n = model.missing_returns(); n > 0) {
      diag.warning(path + ": " + std::to_string(n) + (n == 1 ? " call has" : " calls have") +
                   " no return or unwound record; closed when a shallower record arrived");
    }
  }
  return {};
}

}  // namespace ft::post

#include "postproc/trace_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "functracer/schema.h"

namespace ft::post {

namespace {

constexpr size_t kBufferBytes = 1 << 16;
// A line longer than this is not something functracer writes; it is skipped as
// malformed rather than held in memory.
constexpr size_t kMaxLineBytes = size_t{64} << 20;
// Malformed or out-of-order lines reported one by one per file; the rest are counted.
constexpr uint64_t kMaxReportedLines = 10;

class NullDiagnostics : public Diagnostics {
 public:
  void warning(std::string_view) override {}
};

bool is_end_record(const std::string& type) {
  return type == schema::type::kExit || type == schema::type::kDetach || type == schema::type::kKilled;
}

}  // namespace

void StderrDiagnostics::warning(std::string_view message) {
  std::fprintf(stderr, "functracer-postproc: warning: %.*s\n", static_cast<int>(message.size()),
               message.data());
}

Result<std::vector<std::string>> trace_files(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return std::vector<std::string>{path};
  std::vector<std::string> files;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    std::error_code type_ec;
    std::string name = p.filename().string();
    bool trace = name.ends_with(".trace") || name.ends_with(".trace.zst");
    if (trace && name.front() != '.' && it->is_regular_file(type_ec)) files.push_back(p.string());
  }
  if (ec) return Error::from_errno(ec.value(), path);
  if (files.empty()) return Error::msg(path + ": no trace files (*.trace, *.trace.zst) in this directory");
  std::sort(files.begin(), files.end());
  return files;
}

const std::string* header_plugins(const TraceRecord* header) {
  return header != nullptr ? header->get_str(schema::key::kPlugins) : nullptr;
}

bool header_lists_plugin(const TraceRecord* header, std::string_view plugin) {
  const std::string* plugins = header_plugins(header);
  if (plugins == nullptr) return false;
  std::string_view rest = *plugins;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    if (rest.substr(0, comma) == plugin) return true;
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return false;
}

Status check_trace_file(const std::string& path) {
  NullDiagnostics quiet;
  auto reader = TraceReader::open(path, quiet);
  if (!reader) return reader.error();
  return {};
}

TraceReader::TraceReader(std::string path, TraceStream stream, Diagnostics& diag)
    : path_(std::move(path)), stream_(std::move(stream)), diag_(&diag), buf_(kBufferBytes) {}

Result<TraceReader> TraceReader::open(const std::string& path, Diagnostics& diag) {
  std::shared_ptr<TraceInput> input = TraceInputs::instance().find(path);
  if (!input) {
    auto opened = TraceInput::open(path);
    if (!opened) return opened.error();
    input = std::move(*opened);
  }
  TraceReader r(path, TraceStream(std::move(input)), diag);

  // Decide from the first bytes, so a large binary file is not scanned for a newline.
  r.fill();
  if (r.read_error_) return Error::msg(path + ": " + r.stream_.error());
  const std::string expected = std::string(kTraceMagic) + " " + std::to_string(kTraceFormatVersion);
  const std::string prefix = std::string(kTraceMagic) + " ";
  std::string_view start(r.buf_.data(), std::min(r.buf_len_, prefix.size()));
  if (r.buf_len_ == 0) {
    if (r.stream_.compressed())
      return Error::msg(path + ": no complete compressed block (the trace was cut short before its first one)");
    return Error::msg(path + ": not a functracer trace (the file is empty)");
  }
  if (start != std::string_view(prefix).substr(0, start.size()) || start.size() < prefix.size()) {
    return Error::msg(path + ": not a functracer trace (it does not start with '" + expected +
                      "')");
  }
  LineStatus st = r.read_line(r.line_);
  for (int v = kOldestTraceFormatVersion; v <= kTraceFormatVersion; ++v)
    if (r.line_ == prefix + std::to_string(v)) r.version_ = v;
  if (r.version_ == 0) {
    std::string version = r.line_.substr(prefix.size(), 32);
    return Error::msg(path + ": unsupported trace format version '" + version +
                      "' (this functracer-postproc reads versions " +
                      std::to_string(kOldestTraceFormatVersion) + " to " +
                      std::to_string(kTraceFormatVersion) + ")");
  }
  if (st == LineStatus::kIncomplete) {
    r.incomplete_line_ = true;
    r.warn(1, "the magic line is not terminated (the trace was cut short)");
  } else if (const TraceRecord* first = r.read_record()) {
    r.pending_ = *first;
    r.pending_line_ = r.record_line_;
  }

  if (r.pending_ && r.pending_->type == schema::type::kHeader) {
    r.header_ = *r.pending_;
    if (auto pid = r.header_->get_int(schema::key::kPid)) {
      r.pid_ = *pid;
    } else {
      r.pid_ = r.pending_->tid;
      r.warn(r.pending_line_, "the header record has no pid field; using its thread id");
    }
  } else if (r.pending_) {
    r.pid_ = r.pending_->tid;
    r.warn(r.pending_line_, "the first record is '" + r.pending_->type +
                                "', not the header; using its thread id as the pid");
  }
  return r;
}

void TraceReader::warn(uint64_t line, std::string_view message) {
  std::string text = path_;
  if (line > 0) text += ":" + std::to_string(line);
  text += ": ";
  text += message;
  diag_->warning(text);
}

bool TraceReader::fill() {
  if (eof_) return false;
  buf_pos_ = 0;
  buf_len_ = stream_.read(buf_.data(), buf_.size());
  if (buf_len_ == 0) {
    eof_ = true;
    if (!stream_.error().empty()) {
      read_error_ = true;
      if (line_no_ > 0) warn(line_no_, stream_.error());
    } else if (stream_.cut_inside_frame() && line_no_ > 0) {
      warn(line_no_, "the compressed stream ends inside a zstd frame (the trace was cut short)");
    }
    return false;
  }
  return true;
}

TraceReader::LineStatus TraceReader::read_line(std::string& line) {
  line.clear();
  line_overlong_ = false;
  bool any = false;
  while (true) {
    if (buf_pos_ == buf_len_ && !fill()) {
      if (!any) return LineStatus::kEnd;
      ++line_no_;
      return LineStatus::kIncomplete;
    }
    any = true;
    const char* begin = buf_.data() + buf_pos_;
    size_t avail = buf_len_ - buf_pos_;
    const void* nl = std::memchr(begin, '\n', avail);
    size_t take = nl ? static_cast<size_t>(static_cast<const char*>(nl) - begin) : avail;
    if (!line_overlong_ && line.size() + take > kMaxLineBytes) {
      line_overlong_ = true;
      line.clear();
      line.shrink_to_fit();
    }
    if (!line_overlong_) line.append(begin, take);
    if (nl) {
      buf_pos_ += take + 1;
      ++line_no_;
      return LineStatus::kLine;
    }
    buf_pos_ = buf_len_;
  }
}

const TraceRecord* TraceReader::read_record() {
  while (true) {
    LineStatus st = read_line(line_);
    if (st == LineStatus::kEnd) return nullptr;
    if (st == LineStatus::kIncomplete) {
      incomplete_line_ = true;  // said in finish(), with the missing end record
      return nullptr;
    }
    std::string problem;
    if (line_overlong_) {
      problem = "line longer than " + std::to_string(kMaxLineBytes >> 20) + " MiB";
    } else {
      Status parsed = parser_.parse(line_, record_);
      if (parsed) {
        record_line_ = line_no_;
        if (last_seq_ != 0 && record_.seq <= last_seq_) {
          if (++out_of_order_ <= kMaxReportedLines) {
            warn(line_no_, "sequence number " + std::to_string(record_.seq) +
                               " does not follow " + std::to_string(last_seq_) +
                               " (records lost or files mixed up?)");
          }
        }
        last_seq_ = record_.seq;
        if (record_.ts_ns > last_ts_) last_ts_ = record_.ts_ns;
        if (is_end_record(record_.type)) seen_end_record_ = true;
        if (record_.type == schema::type::kUntraced) note_untraced(record_);
        if (version_ >= 2) {
          if (record_.type == schema::type::kStack) {
            keep_stack();
            continue;
          }
          resolve_stack();
        }
        return &record_;
      }
      problem = parsed.error().message;
    }
    if (++malformed_ <= kMaxReportedLines) warn(line_no_, "malformed record, skipped: " + problem);
  }
}

void TraceReader::keep_stack() {
  auto id = record_.get_int(schema::key::kId);
  const HexList* frames = record_.get_list(schema::key::kFrames);
  if (!id || !frames || frames->size() > kMaxStackFrames) {
    if (++malformed_ <= kMaxReportedLines) {
      warn(line_no_, frames && id ? "malformed stack record (more than " + std::to_string(kMaxStackFrames) +
                                        " frames), skipped"
                                  : std::string("malformed stack record (no id or no frames), skipped"));
    }
    return;
  }
  stacks_[*id] = *frames;
}

void TraceReader::resolve_stack() {
  auto& fields = record_.fields;
  auto f = std::find_if(fields.begin(), fields.end(), [](const TraceField& f) { return f.key == schema::key::kStack; });
  if (f == fields.end()) return;
  const int64_t* id = std::get_if<int64_t>(&f->value);
  auto it = id ? stacks_.find(*id) : stacks_.end();
  if (it == stacks_.end()) {
    if (++malformed_ <= kMaxReportedLines) {
      warn(line_no_, "the record refers to a call stack that no earlier stack record holds; "
                     "it is read without its frames");
    }
    fields.erase(f);
    return;
  }
  f->key = schema::key::kFrames;
  f->value = it->second;
}

const TraceRecord* TraceReader::next() {
  if (pending_) {
    record_ = std::move(*pending_);
    pending_.reset();
    record_line_ = pending_line_;
    return &record_;
  }
  if (finished_) return nullptr;
  if (!incomplete_line_) {
    if (const TraceRecord* r = read_record()) return r;
  }
  finish();
  return nullptr;
}

void TraceReader::note_untraced(const TraceRecord& r) {
  const std::string* fn = r.get_str(schema::key::kFunction);
  const std::string* why = r.get_str(schema::key::kReason);
  std::string gap = (fn ? *fn : std::string("a function")) + " was not traced (" +
                    (why ? *why : std::string("refused")) + ")";
  // The same function refused again (after an exec, in a library loaded twice) is one gap.
  if (std::find(untraced_.begin(), untraced_.end(), gap) == untraced_.end()) untraced_.push_back(std::move(gap));
}

void TraceReader::warn_untraced() {
  if (untraced_warned_) return;
  untraced_warned_ = true;
  for (const std::string& gap : untraced_) warn(0, gap + ": the totals are incomplete");
}

void TraceReader::finish() {
  finished_ = true;
  warn_untraced();
  if (malformed_ > kMaxReportedLines) {
    warn(0, std::to_string(malformed_ - kMaxReportedLines) + " more malformed lines not shown");
  }
  if (out_of_order_ > kMaxReportedLines) {
    warn(0, std::to_string(out_of_order_ - kMaxReportedLines) +
                " more out-of-order sequence numbers not shown");
  }
  // One line says that the trace was cut short, however it was cut.
  if (incomplete_line_ && line_no_ > 1) {
    warn(line_no_, seen_end_record_ ? "the last line is incomplete (the trace was cut short); ignored"
                                    : "the last line is incomplete (ignored) and the trace ends without an "
                                      "exit, detach or killed record: it was cut short; reporting what it holds");
  } else if (!seen_end_record_) {
    warn(line_no_, "the trace ends without an exit, detach or killed record (cut short?); "
                   "reporting what it holds");
  }
  complete_ = seen_end_record_ && !incomplete_line_ && malformed_ == 0 && !read_error_;
}

}  // namespace ft::post
